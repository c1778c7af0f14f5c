"""SEAL objects to and from bytes, through a private scratch file.

SEAL's Python binding (TenSEAL's ``sealapi``) saves and loads ciphertexts and keys only
through files, so these go through a private scratch folder (in /dev/shm when there is
one), one file per process and thread, removed at once. What is written is what the
caller would send anyway: ciphertexts and public keys, never a secret key.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from typing import Any

from protocols.lifecycle import on_hard_exit

_LOCK = threading.Lock()
_SCRATCH: list[str] = []


def _scratch_path(suffix: str) -> str:
    with _LOCK:
        if not _SCRATCH:
            base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            path = tempfile.mkdtemp(prefix="securefl-seal-", dir=base)
            atexit.register(shutil.rmtree, path, True)
            on_hard_exit(functools.partial(shutil.rmtree, path, True))  # os._exit skips atexit
            _SCRATCH.append(path)
    return os.path.join(_SCRATCH[0], f"{os.getpid()}-{threading.get_ident()}.{suffix}")


def seal_bytes(obj: Any) -> bytes:
    """SEAL's serialisation of ``obj`` (anything with ``save(path)``: a ciphertext, a key, or
    the seeded ``Serializable`` that SEAL's key generator and secret-key encryptor return)."""
    path = _scratch_path("out")
    try:
        obj.save(path)
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        if os.path.exists(path):
            os.remove(path)


def seal_load(obj: Any, seal_context: Any, blob: bytes) -> Any:
    """``obj`` (an empty SEAL object) loaded from ``blob`` for ``seal_context``; SEAL checks it
    and raises ``RuntimeError``/``ValueError`` when it does not fit."""
    path = _scratch_path("in")
    try:
        with open(path, "wb") as fh:
            fh.write(blob)
        obj.load(seal_context, path)
    finally:
        if os.path.exists(path):
            os.remove(path)
    return obj


def varint(value: int) -> bytes:
    """Protocol Buffers' base-128 varint (TenSEAL's wire formats are protobuf)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


__all__ = ["seal_bytes", "seal_load", "varint"]
