"""Fixed-point encoding of float vectors into Z_2^64, the ring secure aggregation sums in.

A value ``v`` becomes ``round(v * 2^scale_bits)`` as a two's-complement int64,
viewed as uint64. Sums of encodings wrap mod 2^64 exactly like the masks do, and
decode back to the float sum as long as the true sum stays inside int64. The
encoder guarantees that for a sum of ``n_summands`` encodings by refusing any value
with ``(|v| * 2^scale_bits + 1) * n_summands > 2^63 - 2^12``
(:class:`~protocols.errors.EncodingOverflowError`, naming both parameters).
The rounding error is at most ``2^-(scale_bits+1)`` per value.
"""

from __future__ import annotations

import numpy as np

from protocols.errors import EncodingOverflowError, InputError

MAX_SCALE_BITS = 52  # beyond this, float64 cannot hold the scaled values exactly
# sums must stay below 2^63; the margin of 2^12 keeps float64 rounding (spacing 2^11
# near 2^63) from ever carrying a value past the int64 range
_LIMIT = float(2**63 - 2**12)


def _check_params(scale_bits: int, n_summands: int = 1) -> None:
    if not isinstance(scale_bits, int) or isinstance(scale_bits, bool) \
            or not 0 <= scale_bits <= MAX_SCALE_BITS:
        raise InputError(f"scale_bits must be an int in 0..{MAX_SCALE_BITS}, got {scale_bits!r}")
    if not isinstance(n_summands, int) or isinstance(n_summands, bool) or n_summands < 1:
        raise InputError(f"n_summands must be a positive int, got {n_summands!r}")


def max_abs_value(scale_bits: int, n_summands: int) -> float:
    """The largest ``|v|`` that :func:`encode` accepts for these parameters."""
    _check_params(scale_bits, n_summands)
    return (_LIMIT / n_summands - 1.0) / 2.0**scale_bits


def encode(values: np.ndarray, *, scale_bits: int, n_summands: int) -> np.ndarray:
    """Encode floats as uint64 fixed point so that ``n_summands`` of them sum without wrapping."""
    _check_params(scale_bits, n_summands)
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.uint64)
    peak = float(np.max(np.abs(array)))
    if not np.isfinite(peak):
        raise EncodingOverflowError("cannot encode a non-finite value (nan or inf) in fixed point")
    if (peak * 2.0**scale_bits + 1.0) * n_summands > _LIMIT:
        raise EncodingOverflowError(
            f"value {peak:.6g} overflows the fixed-point encoding: |value| * 2^scale_bits *"
            f" n_summands must stay below 2^63 (scale_bits={scale_bits}, n_summands={n_summands},"
            f" so |value| <= {max_abs_value(scale_bits, n_summands):.6g}); lower scale_bits"
            " or clip the values")
    scaled = np.multiply(array, 2.0**scale_bits)
    np.rint(scaled, out=scaled)
    return scaled.astype(np.int64).view(np.uint64)


def decode(encoded: np.ndarray, *, scale_bits: int) -> np.ndarray:
    """Decode uint64 fixed point (e.g. a sum of encodings) back to float64."""
    _check_params(scale_bits)
    array = np.asarray(encoded)
    if array.dtype != np.uint64:
        raise InputError(f"fixed-point data must be uint64, got {array.dtype}")
    return array.view(np.int64) / 2.0**scale_bits


def resolution(scale_bits: int) -> float:
    """The spacing between representable values, ``2^-scale_bits``."""
    _check_params(scale_bits)
    return 2.0**-scale_bits
