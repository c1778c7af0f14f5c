"""CKKS specifics: public context, depth, magnitude, corruption, wrong keys, Galois sums."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import CryptoError, DecodeError, EncodingOverflowError, InputError
from protocols.he import CKKSArray, DepthExceededError, make_config, make_he

from .conftest import Scheme


@pytest.fixture(scope="module")
def galois() -> Scheme:
    from .conftest import _ckks_close, _scheme

    return _scheme("ckks", _ckks_close, galois_keys=True)


def test_public_context_has_no_secret_key(ckks: Scheme) -> None:
    public = ckks.secret.public_context()

    assert not public.tenseal_context.is_private()
    assert not public.tenseal_context.has_secret_key()
    assert not ckks.public.tenseal_context.is_private()
    assert not ckks.public.tenseal_context.has_galois_keys()


def test_galois_keys_travel_seeded_at_about_half_tenseals_size(galois: Scheme) -> None:
    # Arrange: the same parameters' public context as TenSEAL serialises it with its own Galois keys
    import tenseal as ts

    config = galois.public.config
    reference = ts.context(ts.SCHEME_TYPE.CKKS, config.poly_modulus_degree,
                           coeff_mod_bit_sizes=list(config.coeff_mod_bit_sizes))
    reference.generate_galois_keys()
    tenseal_size = len(reference.serialize(save_public_key=True, save_secret_key=False,
                                           save_galois_keys=True, save_relin_keys=True))
    # Act
    public = galois.secret.public_context()
    # Assert: half the Galois keys' bytes, and the received context holds them
    assert len(public.serialize()) < 0.6 * tenseal_size
    assert galois.public.tenseal_context.has_galois_keys() and not galois.public.tenseal_context.is_private()


def test_galois_keys_are_for_left_power_of_two_rotations_only(galois: Scheme) -> None:
    # Arrange: SEAL's element for a left rotation by k is 3^k mod 2N
    from protocols.he.ckks_wire import left_rotation_elements

    n = galois.public.config.poly_modulus_degree
    slots = n // 2
    right_by_one, conjugation = pow(3, slots - 1, 2 * n), 2 * n - 1
    # Act
    keys = galois.public.tenseal_context.galois_keys().data
    # Assert
    assert left_rotation_elements(8192)[:4] == [3, 9, 81, 6561] and len(left_rotation_elements(8192)) == 12
    assert all(keys.has_key(elt) for elt in left_rotation_elements(n))
    assert not keys.has_key(right_by_one) and not keys.has_key(conjugation)
    assert keys.size() == len(left_rotation_elements(n))


def test_galois_keys_go_into_the_public_part_and_other_fields_pass_unchanged() -> None:
    from protocols.he.ckks_wire import appended as _appended

    # field 1 "ab", field 2 "c", field 4 the varint 1 (encryption_type)
    proto = b"\x0a\x02ab" + b"\x12\x01c" + b"\x20\x01"

    assert _appended(proto, 2, b"XY") == b"\x0a\x02ab" + b"\x12\x03cXY" + b"\x20\x01"
    with pytest.raises(InputError, match="expected format"):
        _appended(b"\x0d\x00\x00\x00\x00", 2, b"")  # a fixed32 field: not TenSEAL's
    with pytest.raises(InputError, match="expected format"):
        _appended(b"\x12\x09c", 2, b"")  # a length past the end


def test_depth_is_tracked_and_enforced(ckks: Scheme, rng: np.random.Generator) -> None:
    x, w = rng.normal(size=(8, 3)), rng.normal(size=(3, 2))
    enc = ckks.public.encrypt(x)

    once = enc @ w
    twice = (once + once) * 0.5  # addition uses no level
    received = ckks.public.array_from_fields(twice.to_fields())

    assert (enc.level, once.level, twice.level, received.level) == (0, 1, 2, 2)
    assert ckks.close(ckks.secret.decrypt(received), x @ w)
    with pytest.raises(DepthExceededError, match="modulus chain"):
        received * 2.0
    with pytest.raises(DecodeError):
        ckks.public.array_from_fields(dict(twice.to_fields(), level=1))  # lying about the level


def test_adding_arrays_at_different_levels(ckks: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 2))
    enc = ckks.public.encrypt(x)

    out = ckks.secret.decrypt(enc * 3.0 + enc)

    assert ckks.close(out, 4 * x)


def test_magnitude_over_the_modulus_is_refused(ckks: Scheme) -> None:
    enc = ckks.public.encrypt(np.full((2, 2), 200.0))

    with pytest.raises(EncodingOverflowError):
        enc * 4096.0
    with pytest.raises(EncodingOverflowError):
        enc @ np.full((2, 2), 2000.0)


def test_too_many_rows_for_the_slots(ckks: Scheme) -> None:
    with pytest.raises(InputError, match="slots"):
        ckks.public.encrypt(np.zeros((4097, 1)))


def test_corrupted_tensor_bytes_are_refused(ckks: Scheme) -> None:
    fields = ckks.public.encrypt(np.ones((4, 3))).to_fields()
    data = fields["tensor"]
    middle = len(data) // 2

    for bad in (data[:middle], data[:50], b"\x00" * 64, data[:middle] + b"\xff" * 256 + data[middle + 256:]):
        with pytest.raises((DecodeError, CryptoError)):
            ckks.secret.decrypt(ckks.public.array_from_fields(dict(fields, tensor=bad)))


def test_wrong_key_is_detected(ckks: Scheme) -> None:
    other = make_he("ckks")
    enc = ckks.public.encrypt(np.ones((4, 3)))
    forged = CKKSArray(other.public_context(), enc.shape, enc.tensor, layout=enc.layout,
                       lane_count=enc.lane_count, level=enc.level, bound=enc.bound)

    with pytest.raises(CryptoError):
        other.decrypt(enc)
    with pytest.raises(CryptoError):
        other.decrypt(forged)  # same labels, other key: garbage of magnitude ~1e31


def test_config_refuses_insecure_or_inconsistent_parameters() -> None:
    cases = [({"poly_modulus_degree": 4096}, "coeff_mod_bit_sizes"),
             ({"poly_modulus_degree": 2048, "coeff_mod_bit_sizes": [27, 27, 27]}, "poly_modulus_degree"),
             ({"coeff_mod_bit_sizes": [60, 60]}, "coeff_mod_bit_sizes"),
             ({"coeff_mod_bit_sizes": [60, 60, 60, 60]}, "coeff_mod_bit_sizes"),  # 240 > 218 bits
             ({"scale_bits": 50}, "scale_bits"), ({"max_abs": 2.0 ** 20}, "max_abs"),
             ({"galois_keys": 1}, "galois_keys")]
    for options, name in cases:
        with pytest.raises(InputError, match=name):
            make_config("ckks", **options)


def test_galois_keys_give_an_exact_sum_over_axis0(galois: Scheme, rng: np.random.Generator) -> None:
    x, row = rng.normal(size=(9, 3)), rng.normal(size=3)
    enc = galois.public.encrypt(x)

    total = enc.sum(axis=0)  # no reveal_lane_sums needed: rotations sum the slots
    combined = (total + row) * row - total
    received = galois.public.array_from_fields(combined.to_fields())

    assert total.layout == "flat"
    assert galois.close(galois.secret.decrypt(received), (x.sum(0) + row) * row - x.sum(0))
    assert galois.close(galois.secret.decrypt(enc.sum()), x.sum())


def _peer_fields(ckks: Scheme, *, tensor_scale: float | None = None):
    """Fields of a level-1 ciphertext from a peer whose TenSEAL context does not rescale (scale 2^80)."""
    import tenseal as ts

    from protocols.interactive.sealwire import _tensor_proto, ciphertext_bytes, ciphertexts_fields

    context = ts.context_from(ckks.public.tenseal_context.serialize(
        save_public_key=True, save_secret_key=False, save_relin_keys=True, save_galois_keys=False))
    context.auto_rescale = False
    ct = (ts.ckks_tensor(context, np.array([[1.0, 2.0], [3.0, 4.0]]), batch=True) * 3.0).ciphertext()[0]
    fields = ciphertexts_fields(ckks.public, [ct], bound_exp=4)
    if tensor_scale is not None:
        fields["tensor"] = _tensor_proto([ciphertext_bytes(ct)], tensor_scale, ckks.public.config.slots)
    return fields


@pytest.mark.parametrize("scale", [float("nan"), 0.0, -1.0, 2.0 ** 400])
def test_a_peers_tensor_at_a_scale_no_level_holds_is_a_decode_error(ckks: Scheme, scale: float) -> None:
    with pytest.raises(DecodeError, match="scale is out of range"):
        ckks.public.array_from_fields(_peer_fields(ckks, tensor_scale=scale))


def test_arrays_at_different_scales_are_refused_by_the_operation_that_combines_them(ckks: Scheme) -> None:
    # Arrange: a level-1 ciphertext at 2^80, which its level can hold, beside one of ours at 2^40
    theirs = ckks.public.array_from_fields(_peer_fields(ckks))
    ours = ckks.public.encrypt(np.ones((ckks.public.config.slots, 1)))
    # Act / Assert: one InputError, not TenSEAL's raw ValueError
    with pytest.raises(InputError, match="TenSEAL refused add_cipher"):
        theirs + ours
    with pytest.raises(InputError, match="TenSEAL refused"):
        theirs + 1.0
