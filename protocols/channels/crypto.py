"""Key agreement, key derivation and AEAD helpers shared by the channel and secure aggregation.

Everything here is a thin, typed wrapper around ``cryptography`` so that the rest of
the package uses one spelling for each primitive:

* X25519 key pairs come from :func:`new_private_key` (OS randomness, never seeded);
  random seeds from :func:`new_seed` (``os.urandom``).
* :func:`hkdf_sha256` derives keys; its ``info`` is built with :func:`transcript`, an
  unambiguous length-prefixed encoding, so two different contexts never share a key.
* :func:`seal` / :func:`open_sealed` are ChaCha20-Poly1305 with the nonce derived from a
  sequence number. Every failure of :func:`open_sealed` and of key agreement raises
  :class:`~protocols.errors.CryptoError` with the single message :data:`AUTH_FAILED`.
"""

from __future__ import annotations

import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from protocols.errors import CryptoError, InputError

KEY_BYTES = 32
SEED_BYTES = 32
TAG_BYTES = 16
NONCE_BYTES = 12
MAX_SEQ = 2**64 - 1
AUTH_FAILED = "message failed authentication"

TranscriptPart = bytes | str | int


def new_private_key() -> X25519PrivateKey:
    """A fresh X25519 private key from the OS random source."""
    return X25519PrivateKey.generate()


def new_seed() -> bytes:
    """A fresh 32-byte random seed from the OS random source."""
    return os.urandom(SEED_BYTES)


def public_bytes(key: X25519PrivateKey) -> bytes:
    """The raw 32-byte public key of ``key`` (safe to send)."""
    return key.public_key().public_bytes_raw()


def private_bytes(key: X25519PrivateKey) -> bytes:
    """The raw 32-byte private key: fed to secret sharing, or written to its owner's own key file
    (``securefl keygen``); never sent in clear."""
    return key.private_bytes_raw()


def load_private(raw: bytes) -> X25519PrivateKey:
    """A private key from its 32 raw bytes (e.g. after Shamir reconstruction)."""
    try:
        return X25519PrivateKey.from_private_bytes(bytes(raw))
    except ValueError:
        raise CryptoError(AUTH_FAILED) from None


def agree(private: X25519PrivateKey, peer_public: bytes) -> bytes:
    """The X25519 shared secret with a peer's raw public key.

    A malformed or low-order public key raises :class:`CryptoError`.
    """
    try:
        return private.exchange(X25519PublicKey.from_public_bytes(bytes(peer_public)))
    except (ValueError, TypeError):
        raise CryptoError(AUTH_FAILED) from None


def usable_public(peer_public: bytes) -> bool:
    """Whether ``peer_public`` is a 32-byte X25519 key that key agreement accepts (not low order).

    Checked by agreeing with a throwaway key (not one of :func:`new_private_key`'s protocol
    keys): the contributory check of :func:`agree` is the same for every private key."""
    if len(peer_public) != KEY_BYTES:
        return False
    try:
        X25519PrivateKey.generate().exchange(X25519PublicKey.from_public_bytes(bytes(peer_public)))
    except (ValueError, TypeError):
        return False
    return True


def transcript(label: str, *parts: TranscriptPart) -> bytes:
    """An unambiguous encoding of a label and parts, for HKDF ``info`` and AEAD data.

    Each part is type-tagged and length-prefixed, so ``("ab", "c")`` and ``("a", "bc")``
    encode differently, and so do the string ``"1"`` and the integer ``1``.
    """
    out = [_part(label)]
    for part in parts:
        out.append(_part(part))
    return b"".join(out)


def _part(part: TranscriptPart) -> bytes:
    if isinstance(part, bool):
        raise InputError("transcript parts must be bytes, str or int, not bool")
    if isinstance(part, int):
        if not 0 <= part <= MAX_SEQ:
            raise InputError(f"transcript integer {part} is out of range")
        return b"i" + struct.pack(">Q", part)
    if isinstance(part, str):
        raw, kind = part.encode("utf-8"), b"s"
    elif isinstance(part, (bytes, bytearray, memoryview)):
        raw, kind = bytes(part), b"b"
    else:
        raise InputError(f"transcript parts must be bytes, str or int, got {type(part).__name__}")
    return kind + struct.pack(">I", len(raw)) + raw


def hkdf_sha256(ikm: bytes, *, info: bytes, length: int = KEY_BYTES,
                salt: bytes | None = None) -> bytes:
    """HKDF-SHA256 (RFC 5869) of ``ikm``; ``info`` binds the key to its context."""
    if not 1 <= length <= 255 * 32:
        raise InputError(f"HKDF-SHA256 output length must be 1..8160 bytes, got {length}")
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def seq_nonce(seq: int) -> bytes:
    """The 96-bit AEAD nonce for sequence number ``seq``: 4 zero bytes then 64-bit big-endian.

    A key must never seal two messages with the same ``seq``; callers keep one
    counter per key (per direction).
    """
    if not 0 <= seq <= MAX_SEQ:
        raise InputError(f"sequence number {seq} is out of range")
    return b"\x00\x00\x00\x00" + struct.pack(">Q", seq)


def seal(key: bytes, seq: int, associated: bytes, plaintext: bytes) -> bytes:
    """ChaCha20-Poly1305 encryption of ``plaintext`` under ``key`` with nonce from ``seq``."""
    return ChaCha20Poly1305(key).encrypt(seq_nonce(seq), plaintext, associated)


def open_sealed(key: bytes, seq: int, associated: bytes, ciphertext: bytes) -> bytes:
    """Decrypt and authenticate; any failure is the one :class:`CryptoError`."""
    try:
        return ChaCha20Poly1305(key).decrypt(seq_nonce(seq), bytes(ciphertext), associated)
    except (InvalidTag, ValueError, TypeError):
        raise CryptoError(AUTH_FAILED) from None
