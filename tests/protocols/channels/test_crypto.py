"""Key derivation, transcripts and sequence-numbered AEAD wrappers."""

import pytest

from protocols.channels import crypto
from protocols.errors import CryptoError, InputError


def test_hkdf_wrapper_matches_rfc5869_test_case_1():
    ikm = bytes([0x0B] * 22)
    salt = bytes(range(0x0D))
    info = bytes(range(0xF0, 0xFA))

    okm = crypto.hkdf_sha256(ikm, info=info, length=42, salt=salt)

    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                         "34007208d5b887185865")


def test_hkdf_binds_the_context():
    ikm = b"\x01" * 32

    a = crypto.hkdf_sha256(ikm, info=crypto.transcript("ctx", "alice", "bob"))
    b = crypto.hkdf_sha256(ikm, info=crypto.transcript("ctx", "bob", "alice"))

    assert a != b and len(a) == len(b) == 32


@pytest.mark.parametrize("left, right", [
    (("ab", "c"), ("a", "bc")),
    (("1",), (1,)),
    ((b"x",), ("x",)),
    ((), ("",)),
])
def test_transcript_is_unambiguous(left, right):
    assert crypto.transcript("L", *left) != crypto.transcript("L", *right)


def test_transcript_refuses_other_types():
    with pytest.raises(InputError):
        crypto.transcript("L", 1.5)
    with pytest.raises(InputError):
        crypto.transcript("L", True)


def test_key_agreement_is_symmetric():
    a, b = crypto.new_private_key(), crypto.new_private_key()

    assert crypto.agree(a, crypto.public_bytes(b)) == crypto.agree(b, crypto.public_bytes(a))


@pytest.mark.parametrize("bad", [bytes(32), b"\x01" * 5])
def test_key_agreement_with_bad_public_key_is_a_crypto_error(bad):
    with pytest.raises(CryptoError, match=crypto.AUTH_FAILED):
        crypto.agree(crypto.new_private_key(), bad)


def test_usable_public_accepts_real_keys_and_refuses_low_order_and_short_ones():
    # the all-zero and the order-8 point 1 agree to the all-zero secret, which X25519 refuses
    low_order = [bytes(32), (1).to_bytes(32, "little")]

    assert crypto.usable_public(crypto.public_bytes(crypto.new_private_key()))
    assert not any(crypto.usable_public(k) for k in low_order)
    assert not crypto.usable_public(b"\x09" * 31)


def test_seq_nonce_layout():
    assert crypto.seq_nonce(0) == bytes(12)
    assert crypto.seq_nonce(258) == bytes(10) + b"\x01\x02"
    with pytest.raises(InputError):
        crypto.seq_nonce(-1)


def test_seal_open_round_trip():
    key = crypto.new_seed()

    sealed = crypto.seal(key, 7, b"ad", b"hello")

    assert len(sealed) == 5 + crypto.TAG_BYTES
    assert crypto.open_sealed(key, 7, b"ad", sealed) == b"hello"


@pytest.mark.parametrize("change", ["key", "seq", "ad", "byte"])
def test_any_mismatch_is_the_same_crypto_error(change):
    key = crypto.new_seed()
    sealed = crypto.seal(key, 7, b"ad", b"hello")
    args = {"key": key, "seq": 7, "ad": b"ad", "ct": sealed}
    args.update({"key": {"key": crypto.new_seed()}, "seq": {"seq": 8}, "ad": {"ad": b"AD"},
                 "byte": {"ct": bytes([sealed[0] ^ 1]) + sealed[1:]}}[change])

    with pytest.raises(CryptoError) as info:
        crypto.open_sealed(args["key"], args["seq"], args["ad"], args["ct"])

    assert str(info.value) == crypto.AUTH_FAILED
