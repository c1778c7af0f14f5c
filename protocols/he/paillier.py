"""Paillier contexts: configuration, key owner, public context, wire formats.

``PaillierSecretContext.generate(PaillierConfig(...))`` makes a key pair;
``.public_context()`` is what an evaluating party receives (``n``, ``hs`` and the
public parameters -- never p or q). Values are fixed point at ``precision_bits``
and packed ``lanes = (key_bits - 2) // slot_bits`` per ciphertext (one lane of
``key_bits - 2`` bits with ``pack=False``); see :mod:`protocols.he.paillier_array`.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Mapping

import gmpy2
import numpy as np
from gmpy2 import mpz

from protocols.errors import CryptoError, DecodeError, InputError
from protocols.he.base import (EncryptedArray, PublicContext, SecretContext, key_fingerprint,
                               plaintext_to_encrypt, short_repr)
from protocols.he.fixedpoint import FixedPointArray, encode_fixed, scaled_bound, unpack
from protocols.he.paillier_array import PaillierArray, fields_scalar, grid_shape
from protocols.he.paillier_keys import PaillierPrivateKey, PaillierPublicKey
from protocols.he.parallel import resolve_workers

MAGIC = b"SFL-HE-PAILLIER\x01"
_MAX_CONTEXT_BYTES = 1 << 16
FLOAT_MAX = sys.float_info.max
_PUBLIC_FIELDS = ("key_bits", "precision_bits", "slot_bits", "max_abs", "pack")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class PaillierConfig:
    """Paillier parameters. Keys under 2048 bits need ``insecure_small_keys_for_tests``."""

    key_bits: int = 2048
    precision_bits: int = 24
    slot_bits: int = 128
    max_abs: float = 2.0 ** 16
    pack: bool = True
    workers: int | None = None
    insecure_small_keys_for_tests: bool = False

    MIN_SECURE_KEY_BITS: ClassVar[int] = 2048  # ~112-bit security (NIST SP 800-57)
    MIN_TEST_KEY_BITS: ClassVar[int] = 512

    def __post_init__(self) -> None:
        if not isinstance(self.insecure_small_keys_for_tests, bool) or not isinstance(self.pack, bool):
            raise InputError("PaillierConfig.pack and .insecure_small_keys_for_tests must be bool")
        floor = self.MIN_TEST_KEY_BITS if self.insecure_small_keys_for_tests else self.MIN_SECURE_KEY_BITS
        if not _is_int(self.key_bits) or self.key_bits % 2 or not floor <= self.key_bits <= 8192:
            raise InputError(f"PaillierConfig.key_bits must be an even int in {floor}..8192, got "
                             f"{self.key_bits!r}" + ("" if self.insecure_small_keys_for_tests else
                                                     " (smaller keys are insecure)"))
        if not _is_int(self.precision_bits) or not 0 <= self.precision_bits <= 64:
            raise InputError(f"PaillierConfig.precision_bits must be an int in 0..64, got "
                             f"{self.precision_bits!r}")
        if not _is_int(self.slot_bits) or not 16 <= self.slot_bits <= self.key_bits - 2:
            raise InputError(f"PaillierConfig.slot_bits must be an int in 16..key_bits-2, got "
                             f"{self.slot_bits!r}")
        if isinstance(self.max_abs, bool) or not isinstance(self.max_abs, (int, float)) \
                or not 0 < self.max_abs < FLOAT_MAX:  # an int past float's range too (it comes in peers' JSON)
            raise InputError(f"PaillierConfig.max_abs must be a positive finite number, got "
                             f"{short_repr(self.max_abs)}")
        if self.input_bound_bits(self.max_abs) > self.lane_bits - 1:
            raise InputError(f"PaillierConfig.max_abs={self.max_abs:g} at precision_bits="
                             f"{self.precision_bits} does not fit a {self.lane_bits}-bit slot")
        resolve_workers(self.workers)

    @property
    def lanes(self) -> int:
        """Values packed per ciphertext."""
        return (self.key_bits - 2) // self.slot_bits if self.pack else 1

    @property
    def lane_bits(self) -> int:
        """Bits of one lane's slot (lanes hold signed values below 2^(lane_bits-1))."""
        return self.slot_bits if self.pack else self.key_bits - 2

    def input_bound_bits(self, bound: float) -> int:
        """Lane bits of freshly encrypted values with ``|v| <= bound``."""
        try:
            return math.ceil(math.ldexp(float(bound), self.precision_bits)).bit_length()
        except OverflowError:  # past float's range: wider than any key
            return self.key_bits

    def public_dict(self) -> dict[str, Any]:
        """The parameters that travel with the public key."""
        return {name: value for name, value in asdict(self).items() if name in _PUBLIC_FIELDS}


class PaillierPublicContext(PublicContext):
    """Public key + parameters: encrypts and evaluates (no p, q anywhere in it)."""

    scheme = "paillier"

    def __init__(self, key: PaillierPublicKey, config: PaillierConfig) -> None:
        """Internal: use :meth:`load` or ``PaillierSecretContext.public_context()``."""
        if key.key_bits != config.key_bits:
            raise InputError(f"public key has {key.key_bits} bits, config says {config.key_bits}")
        self.key, self._config = key, config
        public = json.dumps(config.public_dict(), sort_keys=True).encode()
        self._key_id = key_fingerprint(key.key_id.encode(), public)

    @property
    def key_id(self) -> str:
        """Fingerprint of the key *and* the public parameters (lanes, scale) it is used with."""
        return self._key_id

    @property
    def config(self) -> PaillierConfig:
        return self._config

    @property
    def lanes(self) -> int:
        return self._config.lanes

    @property
    def lane_bits(self) -> int:
        return self._config.lane_bits

    def encrypt(self, values: Any, *, bound: float | None = None) -> PaillierArray:
        plain, limit = plaintext_to_encrypt(values, bound, self._config.max_abs)
        packed, shape, scale = plain.ndim > 0, plain.shape, self._config.precision_bits
        lane_bound = scaled_bound(limit, scale)
        template = PaillierArray(self, shape, np.empty(grid_shape(shape, self.lanes, packed), object),
                                 packed=packed, scale_bits=scale, bound_bits=lane_bound.bit_length())
        ints = encode_fixed(plain, scale)
        return template.encrypt_lanes(template.values_to_lanes(ints), lane_bound)

    def serialize(self) -> bytes:
        body = dict(self._config.public_dict(), n=format(int(self.key.n), "x"),
                    hs=format(int(self.key.hs), "x"))
        return MAGIC + json.dumps(body, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def load(cls, data: bytes, *, insecure_small_keys_for_tests: bool = False,
             workers: int | None = None) -> "PaillierPublicContext":
        """Parse and validate :meth:`serialize` output (DecodeError / InputError)."""
        if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC) \
                or len(data) > _MAX_CONTEXT_BYTES:
            raise DecodeError("not a serialized Paillier public context")
        try:
            body = json.loads(bytes(data[len(MAGIC):]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DecodeError(f"malformed Paillier public context: {exc}") from None
        if not isinstance(body, dict) or set(body) != {*_PUBLIC_FIELDS, "n", "hs"}:
            raise DecodeError("Paillier public context has missing or unknown fields")
        try:
            n, hs = mpz(body.pop("n"), 16), mpz(body.pop("hs"), 16)
        except (TypeError, ValueError):
            raise DecodeError("Paillier public context: n and hs must be hex strings") from None
        config = PaillierConfig(**body, workers=workers,
                                insecure_small_keys_for_tests=insecure_small_keys_for_tests)
        if n.bit_length() != config.key_bits:  # before the primality test, which a huge n makes slow
            raise InputError(f"public key has {n.bit_length()} bits, config says {config.key_bits}")
        key = PaillierPublicKey.from_parts(n, hs)
        if gmpy2.gcd(key.n, gmpy2.primorial(1 << 16)) != 1:
            raise InputError("Paillier modulus has a small prime factor")
        return cls(key, config)

    def array_from_fields(self, fields: Mapping[str, Any]) -> PaillierArray:
        if fields.get("scheme") != self.scheme:
            raise DecodeError("fields do not hold a Paillier array")
        if fields.get("key_id") != self.key_id:
            raise DecodeError("Paillier array is under another public key than this context")
        shape, packed = fields.get("shape"), fields.get("packed")
        scale, bound = fields_scalar(fields, "scale_bits", int), fields_scalar(fields, "bound_bits", int)
        data = fields.get("ciphertexts")
        if not (isinstance(shape, list) and len(shape) <= 32
                and all(_is_int(d) and d > 0 for d in shape)) or not isinstance(packed, bool) \
                or (packed and not shape):
            raise DecodeError(f"malformed Paillier array shape {shape!r}")
        if scale is None or bound is None or not 0 <= scale <= 4096 \
                or not 0 <= bound < self.lane_bits or not isinstance(data, bytes):
            raise DecodeError("malformed Paillier array metadata")
        grid_dims = grid_shape(tuple(shape), self.lanes, packed)
        width, count = self.key.ciphertext_bytes, math.prod(grid_dims)
        if len(data) != width * count:
            raise DecodeError(f"{len(data)} bytes do not hold {count} ciphertexts of {width} bytes")
        cells = [mpz(int.from_bytes(data[i * width:(i + 1) * width], "big")) for i in range(count)]
        if not all(self.key.is_valid_ciphertext(c) for c in cells):
            raise DecodeError("a Paillier ciphertext is out of range or not a unit mod n")
        grid = np.empty(count, dtype=object)
        grid[:] = cells
        return PaillierArray(self, tuple(shape), grid.reshape(grid_dims), packed=packed,
                             scale_bits=scale, bound_bits=bound)


class PaillierSecretContext(SecretContext):
    """The key owner: holds p and q, decrypts, hands out the public context."""

    scheme = "paillier"

    def __init__(self, key: PaillierPrivateKey, config: PaillierConfig) -> None:
        """Internal: use :meth:`generate`."""
        self._key = key
        self._public = PaillierPublicContext(key.public, config)

    @classmethod
    def generate(cls, config: PaillierConfig) -> "PaillierSecretContext":
        """A fresh key pair for ``config``."""
        return cls(PaillierPrivateKey.generate(config.key_bits), config)

    def public_context(self) -> PaillierPublicContext:
        return self._public

    def decrypt_raw(self, array: EncryptedArray) -> FixedPointArray:
        """Exact lanes as fixed-point integers (padding dropped, folded lanes added)."""
        if not isinstance(array, PaillierArray) or array.context.key_id != self.key_id:
            raise CryptoError("decryption failed")
        plains = self._key.decrypt_plaintexts(list(array.grid.reshape(-1)), self.config.workers)
        n, bits = self._key.public.n, self.config.lane_bits
        cells = [unpack(int(p), int(n), array.lanes, bits, array.bound_bits) for p in plains]
        values = array.lanes_to_values(array.cells_to_lanes(cells))
        return FixedPointArray(np.asarray(values, dtype=object).reshape(array.shape),
                               array.scale_bits)

    def decrypt(self, array: EncryptedArray) -> np.ndarray:
        return self.decrypt_raw(array).to_float()
