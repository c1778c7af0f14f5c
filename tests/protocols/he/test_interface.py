"""Every operation of the shared interface, against numpy, on both backends."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from protocols import codec
from protocols.errors import CryptoError, DecodeError, EncodingOverflowError, InputError
from protocols.he import EncryptedArray, load_public_context, make_he

from .conftest import SMALL_PAILLIER, Scheme


def _through_codec(fields: dict) -> dict:
    frame = codec.encode("active", "passive", codec.Tag(0, "he"), fields)
    return dict(codec.decode(frame).fields)


def test_encrypt_decrypt_roundtrip(scheme: Scheme, rng: np.random.Generator) -> None:
    x = rng.uniform(-100, 100, size=(9, 4))

    enc = scheme.public.encrypt(x)

    assert enc.shape == (9, 4)
    assert scheme.close(scheme.secret.decrypt(enc), x)


@pytest.mark.parametrize("shape", [(), (1,), (17,), (4, 1), (3, 1, 1), (5, 3, 2)])
def test_roundtrip_shapes(scheme: Scheme, rng: np.random.Generator, shape: tuple) -> None:
    x = rng.normal(size=shape)

    out = scheme.secret.decrypt(scheme.public.encrypt(x))

    assert scheme.close(out, x)


def test_add_sub_neg(scheme: Scheme, rng: np.random.Generator) -> None:
    x, y, row = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=3)
    ex, ey = scheme.public.encrypt(x), scheme.public.encrypt(y)

    results = {"x+y": ex + ey, "x-y": ex - ey, "-x": -ex, "x+row": ex + row, "row-x": row - ex,
               "y+full": full_plus(ey, x), "x-2.5": ex - 2.5}

    expected = {"x+y": x + y, "x-y": x - y, "-x": -x, "x+row": x + row, "row-x": row - x,
                "y+full": y + x, "x-2.5": x - 2.5}
    for name, enc in results.items():
        assert scheme.close(scheme.secret.decrypt(enc), expected[name]), name


def full_plus(enc: EncryptedArray, plain: np.ndarray) -> EncryptedArray:
    """numpy array on the left: numpy must defer to the encrypted operand."""
    return plain + enc


def test_multiply_by_scalar_and_row(scheme: Scheme, rng: np.random.Generator) -> None:
    x, row = rng.normal(size=(7, 4)), rng.normal(size=4)
    enc = scheme.public.encrypt(x)

    by_scalar, by_row, by_int = enc * -1.75, enc * row, 3 * enc

    assert scheme.close(scheme.secret.decrypt(by_scalar), x * -1.75)
    assert scheme.close(scheme.secret.decrypt(by_row), x * row)
    assert scheme.close(scheme.secret.decrypt(by_int), 3 * x)


def test_multiply_by_array_constant_along_axis0(scheme: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 3))
    tiled = np.tile(rng.normal(size=(1, 3)), (5, 1))

    out = scheme.secret.decrypt(scheme.public.encrypt(x) * tiled)

    assert scheme.close(out, x * tiled)


def test_multiply_by_array_varying_along_packed_axis_is_refused(scheme: Scheme) -> None:
    enc = scheme.public.encrypt(np.ones((4, 2)))

    with pytest.raises(InputError, match="constant along axis 0"):
        enc * np.arange(8.0).reshape(4, 2)


@pytest.mark.parametrize("d_in, d_out", [(5, 3), (1, 1), (4, 1)])
def test_batch_matmul(scheme: Scheme, rng: np.random.Generator, d_in: int, d_out: int) -> None:
    x, w, b = rng.normal(size=(12, d_in)), rng.normal(size=(d_in, d_out)), rng.normal(size=d_out)

    out = scheme.secret.decrypt(scheme.public.encrypt(x) @ w + b)

    assert scheme.close(out, x @ w + b)


def test_matmul_then_multiply(scheme: Scheme, rng: np.random.Generator) -> None:
    x, w = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))

    out = scheme.secret.decrypt((scheme.public.encrypt(x) @ w) * 0.5)

    assert scheme.close(out, (x @ w) * 0.5)


def test_sum_over_unpacked_axes(scheme: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(4, 3, 2))
    enc = scheme.public.encrypt(x)

    by_last, by_middle = enc.sum(axis=-1), enc.sum(axis=1)

    assert scheme.close(scheme.secret.decrypt(by_last), x.sum(axis=-1))
    assert scheme.close(scheme.secret.decrypt(by_middle), x.sum(axis=1))


def test_sum_over_packed_axis_needs_consent(scheme: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(6, 2))
    enc = scheme.public.encrypt(x)

    with pytest.raises(InputError, match="reveal_lane_sums"):
        enc.sum(axis=0)
    total, columns = enc.sum(reveal_lane_sums=True), enc.sum(0, reveal_lane_sums=True)

    assert scheme.close(scheme.secret.decrypt(total), x.sum())
    assert scheme.close(scheme.secret.decrypt(columns), x.sum(axis=0))


def test_folded_array_keeps_working(scheme: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 3))
    folded = scheme.public.encrypt(x).sum(0, reveal_lane_sums=True)

    out = (folded + 1.0) * 2.0 - folded

    assert scheme.close(scheme.secret.decrypt(out), (x.sum(0) + 1.0) * 2.0 - x.sum(0))


def test_shape_mismatch_names_both_shapes(scheme: Scheme) -> None:
    a, b = scheme.public.encrypt(np.ones((3, 2))), scheme.public.encrypt(np.ones((2, 3)))

    with pytest.raises(InputError, match=r"\(3, 2\).*\(2, 3\)"):
        a + b
    with pytest.raises(InputError, match=r"\(4,\).*\(3, 2\)"):
        a + np.ones(4)
    with pytest.raises(InputError, match=r"\(3, 2\).*\(3, 5\)"):
        a @ np.ones((3, 5))
    with pytest.raises(InputError, match=r"d_out > 0.*\(2, 0\)"):  # TenSEAL would abort the process
        a @ np.ones((2, 0))


@pytest.mark.parametrize("bound", ["a", 10**400, [1.0], 0, float("nan")])
def test_an_encryption_bound_that_is_no_number_names_the_bound(scheme: Scheme, bound) -> None:
    # before: "could not convert string to float", a bare OverflowError or TypeError
    with pytest.raises(InputError, match="bound must be a positive finite number, got "):
        scheme.public.encrypt(np.ones(2), bound=bound)


def test_unsupported_operations_raise_input_error(scheme: Scheme) -> None:
    enc = scheme.public.encrypt(np.ones((2, 2)))

    with pytest.raises(InputError):
        enc * enc
    with pytest.raises(InputError):
        np.ones((2, 2)) @ enc
    with pytest.raises(InputError):
        enc + np.array([np.nan, 1.0])
    with pytest.raises(InputError):
        enc.sum(axis=2)
    with pytest.raises(InputError):
        scheme.public.encrypt(np.ones((0, 3)))


def test_encrypt_refuses_values_over_the_bound(scheme: Scheme) -> None:
    limit = scheme.public.config.max_abs

    with pytest.raises(EncodingOverflowError):
        scheme.public.encrypt(np.array([0.0, 2 * limit]))
    with pytest.raises(EncodingOverflowError):
        scheme.public.encrypt(np.array([3.0]), bound=2.0)
    with pytest.raises(EncodingOverflowError):
        scheme.public.encrypt(np.array([3.0]), bound=1e305)


def test_mixing_two_public_keys_is_refused(scheme: Scheme) -> None:
    other = make_he(scheme.name, **(SMALL_PAILLIER if scheme.name == "paillier" else {}))
    a, b = scheme.public.encrypt(np.ones(3)), other.encrypt(np.ones(3))

    with pytest.raises(InputError, match="different public keys"):
        a + b
    with pytest.raises(CryptoError):
        other.decrypt(a)
    with pytest.raises(DecodeError):
        other.public_context().array_from_fields(a.to_fields())


def test_public_context_and_arrays_roundtrip_through_codec(scheme: Scheme, rng: np.random.Generator) -> None:
    x, w = rng.normal(size=(6, 3)), rng.normal(size=(3, 2))
    message = _through_codec({"context": scheme.secret.public_context().serialize()})
    public = load_public_context(scheme.name, message["context"], insecure_small_keys_for_tests=True)

    enc = public.encrypt(x) @ w
    received = EncryptedArray.from_fields(scheme.public, _through_codec(enc.to_fields()))

    assert public == scheme.public
    assert scheme.close(scheme.secret.decrypt(received), x @ w)


def test_secret_context_never_pickles_or_prints_keys(scheme: Scheme) -> None:
    text = repr(scheme.secret)

    with pytest.raises(TypeError):
        pickle.dumps(scheme.secret)
    assert "hidden" in text


def test_load_public_context_rejects_garbage(scheme: Scheme) -> None:
    good = scheme.secret.public_context().serialize()

    for bad in (b"", b"garbage", good[:20], good[:len(good) // 2] if scheme.name == "ckks" else
                good.replace(b'"n":"', b'"n":"zz')):
        with pytest.raises((DecodeError, InputError)):
            load_public_context(scheme.name, bad, insecure_small_keys_for_tests=True)
    with pytest.raises(InputError):
        load_public_context("rot13", good)


def test_from_fields_rejects_malformed_metadata(scheme: Scheme) -> None:
    fields = scheme.public.encrypt(np.ones((3, 2))).to_fields()

    for name, value in (("shape", [3, "2"]), ("shape", [3, 3]), ("scheme", "other")):
        with pytest.raises(DecodeError):
            scheme.public.array_from_fields(dict(fields, **{name: value}))
