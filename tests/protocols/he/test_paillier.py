"""Paillier specifics: known answers, keys, packing, overflow, tampering, wrong keys."""

from __future__ import annotations

import math
import secrets

import gmpy2
import numpy as np
import pytest

from protocols import codec
from protocols.errors import CryptoError, DecodeError, EncodingOverflowError, InputError
from protocols.he import (FixedPointArray, PaillierArray, PaillierConfig, PaillierPublicContext,
                          load_public_context, make_config, make_he)
from protocols.he.fixedpoint import pack, unpack
from protocols.he.matmul import powers
from protocols.he.paillier_keys import PaillierPrivateKey, PaillierPublicKey

from .conftest import SMALL_PAILLIER, Scheme


def test_known_answer_textbook_paillier() -> None:
    # p = 5, q = 7: n = 35, n^2 = 1225, g = n + 1 = 36. r = 2: r^n = 2^35 mod 1225 = 18.
    # Enc(4) = (1 + 4 * 35) * 18 mod 1225 = 141 * 18 mod 1225 = 2538 - 2450 = 88.
    # CRT decryption: 88 mod 25 = 13, 13^4 mod 25 = 11, L_p = (11 - 1) / 5 = 2, h_p = 2 -> m_p = 4;
    # 88 mod 49 = 39, 39^6 mod 49 = 8, L_q = (8 - 1) / 7 = 1, h_q = 4 -> m_q = 4; so m = 4.
    key = PaillierPrivateKey.from_primes(5, 7, hs=901)

    c = PaillierPublicKey.raw_encrypt(35, 4, 18)

    assert c == 88
    assert key.decrypt_one(88) == 4
    assert key.decrypt_one(88 * 88 % 1225) == 8  # 88^2 mod 1225 = 394 encrypts 4 + 4


def test_known_answer_djn_randomness() -> None:
    # x = 2: h = -4 mod 35 = 31, hs = 31^35 mod 1225 = 901; alpha = 5: hs^5 mod 1225 = 276;
    # Enc(4) = 141 * 276 mod 1225 = 38916 - 31 * 1225 = 941 (through the fixed-base table).
    key = PaillierPrivateKey.from_primes(5, 7, hs=901)

    c = key.public.encrypt_with_alpha(4, 5)

    assert c == 941
    assert key.decrypt_one(941) == 4


def test_crt_decryption_matches_textbook_lambda() -> None:
    key = PaillierPrivateKey.generate(512)
    n, nsq = int(key.public.n), int(key.public.nsquare)
    p, q = int(key._p), int(key._q)  # test-only peek at the primes
    lam = math.lcm(p - 1, q - 1)
    mu = pow((pow(n + 1, lam, nsq) - 1) // n, -1, n)
    messages = [0, 1, n - 1, secrets.randbelow(n)]

    cts = key.public.encrypt_plaintexts(messages, workers=1)

    assert [int(key.decrypt_one(c)) for c in cts] == messages
    assert [(pow(int(c), lam, nsq) - 1) // n * mu % n for c in cts] == messages
    assert [int(m) for m in key.decrypt_plaintexts(cts, workers=2)] == messages


def test_keygen_gives_exact_size_and_fresh_keys() -> None:
    first, second = PaillierPrivateKey.generate(1024), PaillierPrivateKey.generate(1024)

    assert first.public.key_bits == second.public.key_bits == 1024
    assert first.public.n != second.public.n
    assert gmpy2.is_prime(first._p) and gmpy2.is_prime(first._q)


def test_from_primes_validates() -> None:
    with pytest.raises(InputError):
        PaillierPrivateKey.from_primes(7, 7)
    with pytest.raises(InputError):
        PaillierPrivateKey.from_primes(9, 7)


def test_pack_unpack_signed_lanes() -> None:
    lanes = [5, -3, 0, -(2 ** 14) + 1, 2 ** 14 - 1]
    modulus = (1 << 200) + 1  # any odd modulus above 2^(k m + 1)

    packed = pack(lanes, 16) % modulus

    assert unpack(packed, modulus, 5, 16, 14) == lanes
    with pytest.raises(CryptoError):
        unpack(packed, modulus, 5, 16, 13)  # a lane beyond its tracked bound
    with pytest.raises(CryptoError):
        unpack(packed, modulus, 4, 16, 14)  # leftover above the top lane


def test_public_context_holds_no_secret_material(paillier: Scheme) -> None:
    key = paillier.secret._key  # test-only access to the primes
    blob = paillier.secret.public_context().serialize()
    public_key = paillier.public.key

    for prime in (int(key._p), int(key._q)):
        assert format(prime, "x").encode() not in blob
        assert prime.to_bytes((prime.bit_length() + 7) // 8, "big") not in blob
    assert not any(hasattr(public_key, name) for name in ("_p", "_q", "p", "q"))
    assert not any(isinstance(v, PaillierPrivateKey) for v in vars(paillier.public).values())


def test_config_errors_name_the_parameter() -> None:
    cases = [({"key_bits": 1024}, "key_bits"), ({"key_bits": 2047}, "key_bits"),
             ({"precision_bits": -1}, "precision_bits"), ({"slot_bits": 4096}, "slot_bits"),
             ({"max_abs": 2.0 ** 200}, "max_abs"), ({"workers": -2}, "workers"),
             ({"colour": 1}, "colour")]
    for options, name in cases:
        with pytest.raises(InputError, match=name):
            make_config("paillier", **options)
    assert make_config("paillier").key_bits == 2048


def test_loading_small_key_needs_the_flag(paillier: Scheme) -> None:
    blob = paillier.secret.public_context().serialize()

    with pytest.raises(InputError, match="key_bits"):
        load_public_context("paillier", blob)


def test_load_rejects_modulus_with_small_factor(paillier: Scheme) -> None:
    prime = gmpy2.next_prime(1 << 1013)
    n = 1009 * prime  # 1024 bits, divisible by 1009
    blob = paillier.secret.public_context().serialize()
    bad = blob.replace(format(int(paillier.public.key.n), "x").encode(), format(int(n), "x").encode())

    with pytest.raises(InputError):
        load_public_context("paillier", bad, insecure_small_keys_for_tests=True)


@pytest.mark.parametrize("max_abs, message", [
    (10**400, "max_abs must be a positive finite number, got 1000000000000000000000000000..."),
    (1e308, "max_abs=1e\\+308 at precision_bits=.* does not fit"),
])
def test_a_peers_context_with_a_max_abs_past_floats_range_is_an_input_error(paillier: Scheme, max_abs,
                                                                            message) -> None:
    # Arrange: before, float(max_abs) or ldexp raised a bare OverflowError out of load
    import json

    from protocols.he.paillier import MAGIC

    body = json.loads(paillier.secret.public_context().serialize()[len(MAGIC):])
    bad = MAGIC + json.dumps({**body, "max_abs": max_abs}).encode()
    # Act / Assert
    with pytest.raises(InputError, match=message):
        load_public_context("paillier", bad, insecure_small_keys_for_tests=True)


def test_load_checks_the_modulus_size_before_its_primality(paillier: Scheme) -> None:
    # Arrange: a 200,000-bit odd n would take minutes to test for primality
    n = (1 << 199_999) + 1
    blob = paillier.secret.public_context().serialize()
    bad = blob.replace(format(int(paillier.public.key.n), "x").encode(), format(n, "x").encode())
    # Act / Assert: refused by its size alone
    with pytest.raises(InputError, match="public key has 200000 bits, config says 1024"):
        load_public_context("paillier", bad, insecure_small_keys_for_tests=True)


@pytest.mark.parametrize("weak", ["n^2 - 1", "n + 1", "1 + 5n"])
def test_a_djn_base_that_hides_nothing_is_refused(paillier: Scheme, weak: str) -> None:
    # Arrange: hs^r would be +-1, or (1 + n)^k, which shifts the plaintext by a known multiple
    n = int(paillier.public.key.n)
    hs = {"n^2 - 1": n * n - 1, "n + 1": n + 1, "1 + 5n": 1 + 5 * n}[weak]
    # Act / Assert
    with pytest.raises(InputError, match="hides nothing"):
        PaillierPublicKey.from_parts(n, hs)


def test_a_value_beyond_float64_decrypts_only_raw() -> None:
    # Arrange: unpacked lanes may legitimately outgrow a float64
    secret = make_he("paillier", key_bits=2048, pack=False)
    enc = secret.public_context().encrypt(np.array([1.0]))
    for _ in range(20):
        enc = enc * float(2 ** 52)
    # Act / Assert
    assert int(secret.decrypt_raw(enc).values[0]) == 1 << (24 + 52 * 20)
    with pytest.raises(EncodingOverflowError, match="use decrypt_raw"):
        secret.decrypt(enc)


def test_tampered_ciphertext_bytes_are_refused(paillier: Scheme) -> None:
    fields = paillier.public.encrypt(np.ones((3, 2))).to_fields()
    width, key = paillier.public.key.ciphertext_bytes, paillier.public.key
    not_unit, at_least_n2 = int(key.n).to_bytes(width, "big"), b"\xff" * width

    for bad in (not_unit + fields["ciphertexts"][width:], fields["ciphertexts"][1:],
                at_least_n2 + fields["ciphertexts"][width:], bytes(width) + fields["ciphertexts"][width:]):
        with pytest.raises(DecodeError):
            paillier.public.array_from_fields(dict(fields, ciphertexts=bad))


def test_altered_ciphertext_fails_the_integrity_check(paillier: Scheme) -> None:
    enc = paillier.public.encrypt(np.ones((3, 2)))
    grid = enc.grid.copy()
    grid[0, 0] = grid[0, 0] * paillier.public.key.encrypt_with_alpha(1 << 900, 12345) % \
        paillier.public.key.nsquare  # adds 2^900 to the plaintext: the top lanes go out of bound

    altered = PaillierArray(paillier.public, enc.shape, grid, packed=True,
                            scale_bits=enc.scale_bits, bound_bits=enc.bound_bits)

    with pytest.raises(CryptoError):
        paillier.secret.decrypt(altered)


def test_wrong_key_is_detected(paillier: Scheme) -> None:
    other = make_he("paillier", **SMALL_PAILLIER)
    enc = paillier.public.encrypt(np.full((4, 3), 0.5))
    # re-label the ciphertexts as if they were under the other key: only the check catches it
    forged = PaillierArray(other.public_context(), enc.shape, enc.grid % other.public_context().key.nsquare,
                           packed=True, scale_bits=enc.scale_bits, bound_bits=enc.bound_bits)

    with pytest.raises(CryptoError):
        other.decrypt(enc)
    with pytest.raises(CryptoError):
        other.decrypt(forged)


def test_operations_refuse_to_overflow_lanes(paillier: Scheme) -> None:
    enc = paillier.public.encrypt(np.ones((2, 2)))

    with pytest.raises(EncodingOverflowError):
        enc * 2.0 ** 60 * 2.0 ** 60
    with pytest.raises(EncodingOverflowError):
        (enc * 1.5) * 1.5 * 1.5 * 1.5  # each fixed-point factor adds 24 scale bits
    with pytest.raises(EncodingOverflowError):
        enc @ np.full((2, 3), 2.0 ** 70)


def test_scales_align_and_integer_multipliers_stay_exact(paillier: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(5, 2))
    enc = paillier.public.encrypt(x)

    mixed, tripled = enc * 0.25 + enc, enc * 3 - 7

    assert mixed.scale_bits == 2 * enc.scale_bits and tripled.scale_bits == enc.scale_bits
    assert paillier.close(paillier.secret.decrypt(mixed), x * 1.25)
    assert np.array_equal(paillier.secret.decrypt_raw(tripled).values,
                          paillier.secret.decrypt_raw(enc).values * 3 - 7 * 2 ** 24)


def test_matmul_with_negative_zero_and_integer_weights_is_exact(paillier: Scheme) -> None:
    x = np.arange(-12, 12, dtype=float).reshape(8, 3)
    w = np.array([[0, -3, 2, 0], [1, 0, -1, 0], [-2, 5, 0, 0]], dtype=float)

    out = paillier.secret.decrypt(paillier.public.encrypt(x) @ w)

    assert np.array_equal(out, x @ w)


def test_decrypt_raw_is_exact_and_travels(paillier: Scheme, rng: np.random.Generator) -> None:
    x = rng.normal(size=(3, 4))
    raw = paillier.secret.decrypt_raw(paillier.public.encrypt(x))
    frame = codec.encode("passive", "active", codec.Tag(1, "he"), raw.to_fields())

    back = FixedPointArray.from_fields(codec.decode(frame).fields)

    assert np.array_equal(back.values, np.vectorize(int, otypes=[object])(np.rint(x * 2 ** 24)))
    assert np.array_equal(back.to_float(), raw.to_float())
    for bad in ({"width": 0}, {"data": b"\x00"}, {"shape": [2, "x"]}, {"kind": "float"}):
        with pytest.raises(DecodeError):
            FixedPointArray.from_fields(dict(raw.to_fields(), **bad))


def test_unpacked_mode_supports_every_elementwise_operation(rng: np.random.Generator) -> None:
    secret = make_he("paillier", key_bits=512, pack=False, insecure_small_keys_for_tests=True)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    enc = secret.encrypt(x)

    out = secret.decrypt((enc * y).sum(axis=0))

    assert np.allclose(out, (x * y).sum(axis=0), atol=1e-5)


def test_thread_count_does_not_change_results(paillier: Scheme, rng: np.random.Generator) -> None:
    x, w = rng.normal(size=(20, 4)), rng.normal(size=(4, 6))
    serial = PaillierPublicContext(paillier.public.key, PaillierConfig(**dict(
        SMALL_PAILLIER, workers=1)))

    a = paillier.secret.decrypt(paillier.public.encrypt(x) @ w)
    b = paillier.secret.decrypt(serial.array_from_fields((serial.encrypt(x) @ w).to_fields()))

    assert np.allclose(a, b, atol=1e-5) and np.allclose(a, x @ w, atol=1e-5)


def test_window_powers_match_builtin_pow() -> None:
    modulus = gmpy2.mpz(secrets.randbits(256) | 1)
    base = gmpy2.mpz(secrets.randbits(250))
    exps = [0, 1, 2, 255, 256, secrets.randbits(40), secrets.randbits(5)]

    out = powers(base, exps, modulus)

    assert [int(v) for v in out] == [pow(int(base), e, int(modulus)) for e in exps]


def test_window_powers_reduce_a_base_above_the_modulus() -> None:
    base, modulus = gmpy2.mpz(1000), gmpy2.mpz(97)

    out = powers(base, [1, 2, 5], modulus)

    assert [int(v) for v in out] == [1000 % 97, pow(1000, 2, 97), pow(1000, 5, 97)]
