"""Additive masking: unmasking recovers x; the key owner's view is independent of x."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from protocols import codec
from protocols.channels.masking import AdditiveMask
from protocols.errors import EncodingOverflowError, InputError
from protocols.he import EncryptedArray, FixedPointArray, SecretContext, make_he


@pytest.fixture(scope="module", params=["paillier", "ckks"])
def secret(request: pytest.FixtureRequest) -> SecretContext:
    if request.param == "paillier":
        return make_he("paillier", key_bits=1024, insecure_small_keys_for_tests=True)
    return make_he("ckks")


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng()


def _wire(fields: dict[str, Any]) -> dict[str, Any]:
    return dict(codec.decode(codec.encode("a", "b", codec.Tag(0, "mask"), fields)).fields)


def _key_owner(secret: SecretContext, fields: dict[str, Any]) -> Any:
    """Party B: decrypt what A sent and return it over the wire (exact values for Paillier)."""
    masked = EncryptedArray.from_fields(secret.public_context(), _wire(fields))
    raw = secret.decrypt_raw(masked)
    if isinstance(raw, FixedPointArray):
        return FixedPointArray.from_fields(_wire(raw.to_fields()))
    return _wire({"values": raw})["values"]


def _view(secret: SecretContext, returned: Any) -> np.ndarray:
    return returned.to_float() if isinstance(returned, FixedPointArray) else returned


def test_unmasking_recovers_x(secret: SecretContext, rng: np.random.Generator) -> None:
    public = secret.public_context()
    x, w = rng.normal(size=(10, 3)), rng.normal(size=(3, 4))
    enc = public.encrypt(x) @ w
    mask = AdditiveMask.draw(public, like=enc)

    returned = _key_owner(secret, mask.apply(enc).to_fields())
    recovered = mask.remove(returned)

    if secret.scheme == "paillier":
        assert np.array_equal(recovered, secret.decrypt(enc))  # exact in the integers
    assert np.allclose(recovered, x @ w, rtol=1e-3, atol=1e-3)


def test_masks_cover_folded_lanes(secret: SecretContext, rng: np.random.Generator) -> None:
    public = secret.public_context()
    x = rng.normal(size=(9, 2))
    enc = public.encrypt(x).sum(axis=0, reveal_lane_sums=True)
    mask = AdditiveMask.draw(public, like=enc)

    recovered = mask.remove(_key_owner(secret, mask.apply(enc).to_fields()))

    assert np.allclose(recovered, x.sum(axis=0), rtol=1e-3, atol=1e-3)


def test_key_owner_view_is_uncorrelated_with_x(secret: SecretContext) -> None:
    public = secret.public_context()
    x = np.linspace(-1.0, 1.0, 400)
    enc = public.encrypt(x, bound=1.0)
    mask = AdditiveMask.draw(public, like=enc)

    view = _view(secret, _key_owner(secret, mask.apply(enc).to_fields()))

    assert abs(np.corrcoef(x, view)[0, 1]) < 0.25
    assert np.median(np.abs(view)) > 2.0 ** (mask.sigma_bits - 4)


def test_key_owner_cannot_order_two_values(secret: SecretContext) -> None:
    public = secret.public_context()
    enc = public.encrypt(np.array([-1.0, 1.0]), bound=1.0)
    below = 0

    for _ in range(60):
        mask = AdditiveMask.draw(public, like=enc)
        view = _view(secret, secret.decrypt_raw(mask.apply(enc)))
        below += int(view[0] < view[1])

    assert 10 <= below <= 50  # a fair coin (fails w.p. ~1e-7); without masks: 60 of 60


def test_mask_is_single_use_and_bound_to_its_array(secret: SecretContext) -> None:
    public = secret.public_context()
    enc, other = public.encrypt(np.ones((2, 2))), public.encrypt(np.ones((2, 3)))
    mask = AdditiveMask.draw(public, like=enc)

    mask.apply(enc)

    with pytest.raises(InputError, match="once"):
        mask.apply(enc)
    with pytest.raises(InputError):
        AdditiveMask.draw(public, like=other).apply(enc)
    foreign = make_he(secret.scheme, **({"key_bits": 1024, "insecure_small_keys_for_tests": True}
                                        if secret.scheme == "paillier" else {}))
    with pytest.raises(InputError):
        AdditiveMask.draw(foreign.public_context(), like=enc)


def test_masks_that_would_overflow_are_refused(secret: SecretContext) -> None:
    public = secret.public_context()
    enc = public.encrypt(np.ones((2, 2)))

    with pytest.raises(EncodingOverflowError):
        AdditiveMask.draw(public, like=enc, sigma_bits=200)
    if secret.scheme == "paillier":
        grown = enc @ np.full((2, 2), 2.0 ** 60)  # ~103-bit lanes in 128-bit slots: no room for 41
        with pytest.raises(EncodingOverflowError):
            AdditiveMask.draw(public, like=grown)


@pytest.mark.parametrize("bound", [1e300, 1e308])
def test_a_bound_too_large_for_any_lane_is_an_encoding_overflow(secret: SecretContext, bound: float) -> None:
    # Arrange
    public = secret.public_context()
    enc = public.encrypt(np.ones((2, 2)))
    # Act / Assert
    with pytest.raises(EncodingOverflowError):
        AdditiveMask.draw(public, like=enc, bound=bound)


def test_paillier_unmasking_needs_exact_values() -> None:
    secret = make_he("paillier", key_bits=512, insecure_small_keys_for_tests=True)
    enc = secret.encrypt(np.ones(3))
    mask = AdditiveMask.draw(secret.public_context(), like=enc)
    masked = mask.apply(enc)

    with pytest.raises(InputError, match="FixedPointArray"):
        mask.remove(secret.decrypt(masked))
    assert np.array_equal(mask.remove(secret.decrypt_raw(masked)), np.ones(3))


def test_ckks_default_sigma_uses_all_the_room() -> None:
    secret = make_he("ckks")
    enc = secret.encrypt(np.zeros(4), bound=1.0)

    mask = AdditiveMask.draw(secret.public_context(), like=enc)

    assert mask.sigma_bits == 18  # value_limit 2^19 for [60, 40, 40, 60] at scale 2^40
