"""The pseudorandom generator that expands a 32-byte seed into a uint64 mask vector.

The mask is the keystream of a stream cipher from ``cryptography``, read as
little-endian 64-bit words, so it is deterministic for a seed and independent
across seeds:

* ``"aes128-ctr"`` (default): AES-128 in CTR mode, key = the seed's first 16 bytes,
  initial counter block all zeros. With AES-NI it is the fastest choice.
* ``"chacha20"``: ChaCha20, key = the whole 32-byte seed, 16-byte nonce/counter all zeros.

Every seed is used for one mask only (seeds are fresh per round and per pair), so
the fixed zero counter/nonce never repeats a keystream for two different masks.
The keystream is written by OpenSSL straight into a numpy buffer
(``update_into``), with no per-element Python.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from protocols.channels.crypto import SEED_BYTES
from protocols.errors import InputError

PRGS = ("aes128-ctr", "chacha20")
DEFAULT_PRG = "aes128-ctr"
_WORD = np.dtype("<u8")
_SLACK = 16  # update_into wants room for one extra cipher block
CHUNK_WORDS = 32 * 1024  # 256 KiB of keystream at a time: stays in a core's L2 cache


def _encryptor(seed: bytes, prg: str) -> CipherContext:
    if prg == "aes128-ctr":
        return Cipher(algorithms.AES(seed[:16]), modes.CTR(bytes(16))).encryptor()
    if prg == "chacha20":
        return Cipher(algorithms.ChaCha20(seed, bytes(16)), mode=None).encryptor()
    raise InputError(f"unknown PRG {prg!r}; choose one of {list(PRGS)}")


def keystream(seed: bytes, nbytes: int, prg: str = DEFAULT_PRG) -> bytes:
    """The first ``nbytes`` of the keystream for ``seed`` (for tests and small uses)."""
    _check_seed(seed)
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise InputError(f"keystream length nbytes must be a non-negative int, got {nbytes!r}")
    return _encryptor(seed, prg).update(bytes(nbytes))


def expand(seed: bytes, length: int, prg: str = DEFAULT_PRG) -> np.ndarray:
    """``length`` pseudorandom uint64 words from ``seed`` (the keystream as little-endian words)."""
    _check_seed(seed)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise InputError(f"mask length must be a non-negative int, got {length!r}")
    nbytes = int(length) * 8
    encryptor = _encryptor(seed, prg)
    out = np.empty(nbytes + _SLACK, dtype=np.uint8)
    written = encryptor.update_into(np.zeros(nbytes, dtype=np.uint8), out)
    if written != nbytes:  # CTR and ChaCha20 are stream ciphers: all bytes come out at once
        raise RuntimeError(f"stream cipher returned {written} of {nbytes} keystream bytes")
    words = out[:nbytes].view(_WORD)
    return words if _WORD.isnative else words.astype(np.uint64)


class MaskAccumulator:
    """Adds and subtracts many masks into one uint64 vector, mod 2^64.

    The keystream is produced in cache-sized chunks into one small reused buffer
    and added chunk by chunk, so a mask costs one cipher pass and one in-cache
    numpy add per chunk, with no allocation or extra pass over main memory.
    Not for sharing across threads.
    """

    def __init__(self, acc: np.ndarray, prg: str = DEFAULT_PRG, *, chunk_words: int = CHUNK_WORDS) -> None:
        if not isinstance(acc, np.ndarray) or acc.dtype != np.uint64 or acc.ndim != 1:
            raise InputError("mask accumulator must be a 1-D uint64 array")
        if prg not in PRGS:
            raise InputError(f"unknown PRG {prg!r}; choose one of {list(PRGS)}")
        if not isinstance(chunk_words, int) or chunk_words < 1:
            raise InputError(f"chunk_words must be a positive int, got {chunk_words!r}")
        self.acc = acc
        self._prg = prg
        self._chunk = min(chunk_words, max(acc.shape[0], 1))
        self._zeros = np.zeros(self._chunk * 8, dtype=np.uint8)
        self._out = np.empty(self._chunk * 8 + _SLACK, dtype=np.uint8)

    def add(self, seed: bytes, sign: int = 1) -> None:
        """Add (``sign=+1``) or subtract (``sign=-1``) the mask of ``seed``."""
        _check_seed(seed)
        if sign not in (1, -1):
            raise InputError(f"mask sign must be +1 or -1, got {sign!r}")
        op = np.add if sign == 1 else np.subtract
        encryptor = _encryptor(seed, self._prg)
        length = self.acc.shape[0]
        for start in range(0, length, self._chunk):
            stop = min(start + self._chunk, length)
            nbytes = (stop - start) * 8
            written = encryptor.update_into(self._zeros[:nbytes], self._out)
            if written != nbytes:  # stream ciphers return every byte at once
                raise RuntimeError(f"stream cipher returned {written} of {nbytes} keystream bytes")
            mask = self._out[:nbytes].view(_WORD)
            if not _WORD.isnative:
                mask = mask.astype(np.uint64)
            part = self.acc[start:stop]
            op(part, mask, out=part)


def add_mask(acc: np.ndarray, seed: bytes, *, sign: int = 1, prg: str = DEFAULT_PRG) -> None:
    """Add (``sign=+1``) or subtract (``sign=-1``) the mask of ``seed`` into ``acc``, mod 2^64."""
    MaskAccumulator(acc, prg).add(seed, sign)


def _check_seed(seed: bytes) -> None:
    if not isinstance(seed, (bytes, bytearray)) or len(seed) != SEED_BYTES:
        raise InputError(f"PRG seed must be {SEED_BYTES} bytes")
