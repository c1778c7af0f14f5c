"""CKKS contexts over TenSEAL: configuration, key owner, public context, wire formats.

Defaults: poly_modulus_degree 8192, coeff_mod_bit_sizes [60, 40, 40, 60] (200 bits,
within the HE-standard 218-bit limit for 128-bit security at N = 8192; SEAL itself
refuses parameters above it), scale 2^40. The public context carries the public
key and the relinearisation keys -- TenSEAL's ``CKKSTensor`` plaintext multiply
insists on them although no ciphertext product is ever formed -- and Galois keys
only with ``galois_keys=True`` (needed only for exact sums over axis 0; the public
context then takes 10.2 MB with these defaults, where TenSEAL's own serialisation
takes 35 MB: SEAL makes them seeded and for left rotations only, see
:func:`protocols.he.ckks_wire.public_bytes`).

Batch matmul uses ``CKKSTensor(batch=True)``: each of the d_in ciphertexts holds one
column of X, and ``mm`` forms every output column as a sum of ciphertext x scalar
products (no rotations). Measured for (128 x 20) @ (20 x 100) on 2 cores: 0.57 s
against 1.1 s for a Python loop over column-packed ``CKKSVector`` objects.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

import numpy as np
import tenseal as ts

from protocols.errors import CryptoError, DecodeError, InputError
from protocols.he.base import (EncryptedArray, PublicContext, SecretContext, key_fingerprint,
                               plaintext_to_encrypt, short_repr)
from protocols.he.ckks_array import LAYOUTS, CKKSArray, encrypt_batched
from protocols.he.parallel import resolve_workers
from protocols.he.ckks_wire import ciphertext_count, public_bytes

MAGIC = b"SFL-HE-CKKS\x01"
_HEADER = struct.Struct("<I")
_MAX_CONTEXT_BYTES = 1 << 28
_TENSEAL_ERRORS = (ValueError, RuntimeError, TypeError)


@dataclass(frozen=True)
class CKKSConfig:
    """CKKS parameters, checked against the HE standard's 128-bit table."""

    poly_modulus_degree: int = 8192
    coeff_mod_bit_sizes: tuple[int, ...] = (60, 40, 40, 60)
    scale_bits: int = 40
    max_abs: float = 2.0 ** 8
    galois_keys: bool = False
    workers: int | None = None

    # largest total coefficient modulus (bits) for 128-bit classical security
    MAX_TOTAL_BITS: ClassVar[Mapping[int, int]] = MappingProxyType(
        {4096: 109, 8192: 218, 16384: 438, 32768: 881})

    def __post_init__(self) -> None:
        sizes = self.coeff_mod_bit_sizes
        if isinstance(sizes, list):
            object.__setattr__(self, "coeff_mod_bit_sizes", tuple(sizes))
            sizes = self.coeff_mod_bit_sizes
        degree = self.poly_modulus_degree
        limit = self.MAX_TOTAL_BITS.get(degree) if type(degree) is int else None
        if limit is None:
            raise InputError(f"CKKSConfig.poly_modulus_degree must be one of "
                             f"{sorted(self.MAX_TOTAL_BITS)}, got {self.poly_modulus_degree!r}")
        if not (isinstance(sizes, tuple) and len(sizes) >= 3 and all(
                isinstance(b, int) and not isinstance(b, bool) and 20 <= b <= 60 for b in sizes)):
            raise InputError("CKKSConfig.coeff_mod_bit_sizes must list >= 3 ints in 20..60, got "
                             f"{sizes!r}")
        if sum(sizes) > limit:
            raise InputError(f"CKKSConfig.coeff_mod_bit_sizes total {sum(sizes)} bits exceeds "
                             f"{limit} for 128-bit security at N={self.poly_modulus_degree}")
        if isinstance(self.scale_bits, bool) or not isinstance(self.scale_bits, int) \
                or not 20 <= self.scale_bits <= min(sizes[1:-1]) or self.scale_bits >= sizes[0]:
            raise InputError("CKKSConfig.scale_bits must be an int >= 20, at most every middle "
                             f"prime and below the first, got {self.scale_bits!r}")
        if isinstance(self.max_abs, bool) or not isinstance(self.max_abs, (int, float)) \
                or not 0 < self.max_abs <= self.value_limit:
            raise InputError(f"CKKSConfig.max_abs must be in (0, {self.value_limit:g}], got "
                             f"{short_repr(self.max_abs)}")
        if not isinstance(self.galois_keys, bool):
            raise InputError("CKKSConfig.galois_keys must be bool")
        resolve_workers(self.workers)

    @property
    def max_depth(self) -> int:
        """Plaintext multiplications available on a fresh ciphertext."""
        return len(self.coeff_mod_bit_sizes) - 2

    @property
    def value_limit(self) -> float:
        """Largest magnitude a lane may reach: 2^(q0_bits - scale_bits - 1)."""
        return math.ldexp(1.0, self.coeff_mod_bit_sizes[0] - self.scale_bits - 1)

    @property
    def slots(self) -> int:
        return self.poly_modulus_degree // 2

    def public_dict(self) -> dict[str, Any]:
        return {"poly_modulus_degree": self.poly_modulus_degree,
                "coeff_mod_bit_sizes": list(self.coeff_mod_bit_sizes),
                "scale_bits": self.scale_bits, "max_abs": self.max_abs,
                "galois_keys": self.galois_keys}


class CKKSPublicContext(PublicContext):
    """TenSEAL context without a secret key, plus parameters."""

    scheme = "ckks"

    def __init__(self, tenseal_bytes: bytes, config: CKKSConfig) -> None:
        """Internal: use :meth:`load` or ``CKKSSecretContext.public_context()``."""
        try:
            ctx = ts.context_from(tenseal_bytes, n_threads=resolve_workers(config.workers))
        except _TENSEAL_ERRORS as exc:
            raise DecodeError(f"malformed TenSEAL context: {exc}") from None
        key_data = ctx.seal_context().data.key_context_data()
        if ctx.is_private() or not ctx.has_public_key() or not ctx.has_relin_keys() \
                or ctx.has_galois_keys() != config.galois_keys \
                or key_data.parms().poly_modulus_degree() != config.poly_modulus_degree \
                or key_data.total_coeff_modulus_bit_count() != sum(config.coeff_mod_bit_sizes) \
                or ctx.global_scale != 2.0 ** config.scale_bits:
            raise InputError("TenSEAL context does not match the CKKS public parameters")
        self.tenseal_context, self._bytes, self._config = ctx, bytes(tenseal_bytes), config
        public = json.dumps(config.public_dict(), sort_keys=True).encode()
        self._key_id = key_fingerprint(b"ckks", self._bytes, public)

    @property
    def key_id(self) -> str:
        return self._key_id

    @property
    def config(self) -> CKKSConfig:
        return self._config

    def encrypt(self, values: Any, *, bound: float | None = None) -> CKKSArray:
        plain, limit = plaintext_to_encrypt(values, bound, self._config.max_abs)
        if plain.ndim and plain.shape[0] > self._config.slots:
            raise InputError(f"axis 0 of shape {plain.shape} exceeds the {self._config.slots} CKKS "
                             "slots; encrypt it in chunks")
        rows = plain.reshape(1) if plain.ndim == 0 else plain
        tensor = encrypt_batched(self.tenseal_context, rows)
        return CKKSArray(self, plain.shape, tensor, layout="batched" if plain.ndim else "folded",
                         lane_count=rows.shape[0], level=0, bound=limit)

    def serialize(self) -> bytes:
        header = json.dumps(self._config.public_dict(), separators=(",", ":")).encode()
        return MAGIC + _HEADER.pack(len(header)) + header + self._bytes

    @classmethod
    def load(cls, data: bytes, *, workers: int | None = None) -> "CKKSPublicContext":
        """Parse and validate :meth:`serialize` output (DecodeError / InputError)."""
        start = len(MAGIC) + _HEADER.size
        if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC) \
                or not start <= len(data) <= _MAX_CONTEXT_BYTES:
            raise DecodeError("not a serialized CKKS public context")
        (length,) = _HEADER.unpack_from(data, len(MAGIC))
        if start + length > len(data):
            raise DecodeError("CKKS public context header length out of range")
        try:
            body = json.loads(bytes(data[start:start + length]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DecodeError(f"malformed CKKS public context: {exc}") from None
        if not isinstance(body, dict) or set(body) != set(CKKSConfig().public_dict()):
            raise DecodeError("CKKS public context has missing or unknown fields")
        config = CKKSConfig(**body, workers=workers)
        return cls(bytes(data[start + length:]), config)

    def array_from_fields(self, fields: Mapping[str, Any]) -> CKKSArray:
        if fields.get("scheme") != self.scheme:
            raise DecodeError("fields do not hold a CKKS array")
        if fields.get("key_id") != self.key_id:
            raise DecodeError("CKKS array is under another public key than this context")
        shape, layout, data = fields.get("shape"), fields.get("layout"), fields.get("tensor")
        ints = {name: fields.get(name) for name in ("lane_count", "level", "bound_exp")}
        if not (isinstance(shape, list) and len(shape) <= 32 and all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)) \
                or layout not in LAYOUTS or (layout == "batched" and not shape) \
                or not isinstance(data, bytes) \
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in ints.values()):
            raise DecodeError("malformed CKKS array fields")
        if not 0 <= ints["level"] <= self._config.max_depth \
                or not 1 <= ints["lane_count"] <= self._config.slots or ints["bound_exp"] > 1024:
            raise DecodeError("CKKS array metadata out of range")
        expected = shape[1:] if layout == "batched" else shape
        if ciphertext_count(data) != math.prod(expected):  # before SEAL expands each (zlib) blob
            raise DecodeError("CKKS tensor does not hold one ciphertext per declared entry")
        try:
            tensor = ts.ckks_tensor_from(self.tenseal_context, data)
            cts = tensor.data.ciphertext()
        except (*_TENSEAL_ERRORS, IndexError) as exc:
            raise DecodeError(f"malformed CKKS tensor: {exc}") from None
        chain = len(self._config.coeff_mod_bit_sizes) - 1
        # every ciphertext: one of another size or level would reach SEAL as an untyped error
        if list(tensor.shape) != expected or not cts or any(
                ct.size() != 2 or chain - ct.coeff_modulus_size() != ints["level"] for ct in cts):
            raise DecodeError("CKKS tensor does not match its declared shape or level")
        # the packed engine's ciphertexts carry raised scales, so any scale the level can hold passes;
        # one that differs from another array's is refused by the operation that combines them
        room = 2.0 ** sum(self._config.coeff_mod_bit_sizes[:chain - ints["level"]])
        if not all(1.0 <= scale < room for scale in (tensor.scale(), *(ct.scale for ct in cts))):
            raise DecodeError("CKKS tensor scale is out of range for its level")
        return CKKSArray(self, tuple(shape), tensor, layout=layout, lane_count=ints["lane_count"],
                         level=ints["level"], bound=math.ldexp(1.0, ints["bound_exp"]))


class CKKSSecretContext(SecretContext):
    """The key owner: a private TenSEAL context; hands out the public context."""

    scheme = "ckks"

    def __init__(self, context: ts.Context, config: CKKSConfig) -> None:
        """Internal: use :meth:`generate`."""
        self._context = context
        self._public = CKKSPublicContext(public_bytes(context, config.galois_keys), config)

    @classmethod
    def generate(cls, config: CKKSConfig) -> "CKKSSecretContext":
        """Fresh keys (SEAL draws them from the OS via its default PRNG factory). Galois keys, when
        the config has them, are made for the public context only: the key owner never rotates."""
        ctx = ts.context(ts.SCHEME_TYPE.CKKS, config.poly_modulus_degree,
                         coeff_mod_bit_sizes=list(config.coeff_mod_bit_sizes),
                         n_threads=resolve_workers(config.workers))
        ctx.global_scale = 2.0 ** config.scale_bits
        return cls(ctx, config)

    def public_context(self) -> CKKSPublicContext:
        return self._public

    def decrypt_raw(self, array: EncryptedArray) -> np.ndarray:
        """The lanes' sum where folded; CKKS values are approximate, so raw = decrypt."""
        return self.decrypt(array)

    def decrypt(self, array: EncryptedArray) -> np.ndarray:
        if not isinstance(array, CKKSArray) or array.context.key_id != self.key_id:
            raise CryptoError("decryption failed")
        try:
            lanes = np.array(array.tensor.decrypt(self._context.secret_key()).tolist(),
                             dtype=np.float64)
        except _TENSEAL_ERRORS:
            raise CryptoError("decryption failed") from None
        limit = 2.0 * self.config.value_limit
        if lanes.shape != array.lane_shape or not np.all(np.abs(lanes) <= limit):
            raise CryptoError("decryption failed")
        return np.asarray(array.lanes_to_values(lanes), dtype=np.float64)
