"""Fixed-point integers and the lane packing of several of them into one plaintext.

A real ``v`` at scale ``s`` is the integer ``round(v * 2^s)``. ``m`` signed
integers ("lanes") of a k-bit slot pack into one plaintext as the signed integer
``P = sum_i v_i 2^(k i)``, stored mod n. Linear maps with integer coefficients act
on every lane at once and stay exact while each lane keeps ``|v_i| < 2^(k-1)``
(and then ``|P| < 2^(k m) <= n/2``). Unpacking takes centred residues mod 2^k,
lowest lane first; a leftover above the top lane, or a lane beyond its tracked
bound, means the plaintext was not what the evaluator built (wrong key or a
corrupted ciphertext) and is reported as CryptoError without saying which.

Why this is a sound integrity check (not authentication: Paillier is malleable by
design, and a peer that follows the protocol is assumed): a wrong key or a
corrupted ciphertext decrypts to an effectively uniform residue mod n. Each lane
then lands inside its bound with probability 2^(bound_bits + 1 - k) and the
leftover is zero with probability about 2^-(key_bits - 2 - k m), so garbage passes
with probability at most 2^-(k - 1 - bound_bits) per lane: below 2^-195 per
ciphertext for 15 lanes of 128 bits even at the 114-bit bound of a masked matmul,
and below 2^-2000 for one unpacked lane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from protocols.errors import CryptoError, DecodeError, EncodingOverflowError, InputError

MAX_WIRE_BYTES = 1024  # widest lane a FixedPointArray carries on the wire (8192 bits)


def encode_fixed(values: np.ndarray, scale_bits: int) -> np.ndarray:
    """``round(values * 2^scale_bits)`` as an object array of exact Python ints."""
    with np.errstate(over="ignore"):
        scaled = np.rint(np.ldexp(np.asarray(values, dtype=np.float64), scale_bits))
    if not np.all(np.isfinite(scaled)):
        raise EncodingOverflowError(f"values do not fit a float64 at scale 2^{scale_bits}")
    out = np.empty(scaled.shape, dtype=object)
    out.reshape(-1)[:] = [int(v) for v in scaled.reshape(-1)]
    return out


def scaled_bound(bound: float, scale_bits: int) -> int:
    """``ceil(bound * 2^scale_bits)``, at least 1: the integer bound of fixed-point lanes.
    EncodingOverflowError where no float holds it (e.g. bound 1e305), as no lane would."""
    try:
        return max(math.ceil(math.ldexp(float(bound), scale_bits)), 1)
    except OverflowError:
        raise EncodingOverflowError(f"bound {bound:g} at {scale_bits} fraction bits is beyond any lane") from None


def max_abs_int(ints: np.ndarray) -> int:
    """The largest magnitude in an object array of ints (0 when empty)."""
    return max((abs(int(v)) for v in ints.reshape(-1)), default=0)


def pack(lanes: Sequence[int], slot_bits: int) -> int:
    """The signed integer ``sum_i lanes[i] * 2^(slot_bits * i)``."""
    packed = 0
    for lane in reversed(lanes):
        packed = (packed << slot_bits) + int(lane)
    return packed


def unpack(plain: int, modulus: int, lanes: int, slot_bits: int, bound_bits: int) -> list[int]:
    """Invert :func:`pack` on ``plain mod modulus``; CryptoError if it is not a valid packing."""
    value = plain - modulus if plain > modulus // 2 else plain
    half, mask, limit = 1 << (slot_bits - 1), (1 << slot_bits) - 1, 1 << bound_bits
    out = []
    for _ in range(lanes):
        lane = value & mask
        if lane >= half:
            lane -= 1 << slot_bits
        if not -limit < lane < limit:
            raise CryptoError("decryption failed")
        out.append(lane)
        value = (value - lane) >> slot_bits
    if value != 0:
        raise CryptoError("decryption failed")
    return out


@dataclass(frozen=True, eq=False)
class FixedPointArray:
    """Exact decrypted fixed-point values: ``values / 2^scale_bits``.

    A key owner returns this (not floats) for masked values, so that the masking
    party removes its mask exactly in the integers before any rounding to float.
    """

    values: np.ndarray  # object array of Python ints
    scale_bits: int

    def __post_init__(self) -> None:
        if not isinstance(self.values, np.ndarray) or self.values.dtype != object:
            raise InputError("FixedPointArray.values must be an object array of ints")
        if isinstance(self.scale_bits, bool) or not isinstance(self.scale_bits, int) \
                or not 0 <= self.scale_bits <= 8 * MAX_WIRE_BYTES:
            raise InputError(f"FixedPointArray.scale_bits out of range: {self.scale_bits!r}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def to_float(self) -> np.ndarray:
        """Correctly rounded float64 values (Python int true division)."""
        denominator = 1 << self.scale_bits
        try:
            flat = [int(v) / denominator for v in self.values.reshape(-1)]
        except OverflowError:  # a valid unpacked lane can exceed float64; decrypt_raw still holds it exactly
            raise EncodingOverflowError("a decrypted value is beyond float64's range; use decrypt_raw for the"
                                        " exact fixed-point lanes") from None
        return np.array(flat, dtype=np.float64).reshape(self.shape)

    def to_fields(self) -> dict[str, Any]:
        """Codec-ready fields: fixed-width little-endian two's-complement lanes."""
        width = max((max_abs_int(self.values).bit_length() + 8) // 8, 1)
        data = b"".join(int(v).to_bytes(width, "little", signed=True)
                        for v in self.values.reshape(-1))
        return {"kind": "fixed", "shape": list(self.shape), "scale_bits": self.scale_bits,
                "width": width, "data": data}

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> "FixedPointArray":
        """Rebuild from :meth:`to_fields`, validating every length (DecodeError)."""
        shape, width, data = fields.get("shape"), fields.get("width"), fields.get("data")
        scale = fields.get("scale_bits")
        if fields.get("kind") != "fixed" or not isinstance(data, bytes):
            raise DecodeError("not a fixed-point array")
        if not (isinstance(shape, list) and len(shape) <= 32
                and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise DecodeError(f"malformed fixed-point shape {shape!r}")
        if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIRE_BYTES:
            raise DecodeError(f"malformed fixed-point width {width!r}")
        count = math.prod(shape)
        if len(data) != count * width:
            raise DecodeError(f"{len(data)} bytes do not hold {count} lanes of {width} bytes")
        ints = [int.from_bytes(data[i * width:(i + 1) * width], "little", signed=True)
                for i in range(count)]
        values = np.empty(count, dtype=object)
        values[:] = ints
        try:
            return cls(values.reshape(shape), scale)
        except InputError as exc:
            raise DecodeError(str(exc)) from None
