"""Encrypted arrays under CKKS (TenSEAL ``CKKSTensor``).

Layouts. *batched*: the tensor is encrypted with ``batch=True`` -- axis 0 runs
along the slots of every ciphertext (at most poly_modulus_degree/2 rows), the
other axes index ciphertexts. *folded*: a batched tensor whose logical value is
the sum over its slots ("lanes"), finished by the key owner after decryption.
*flat*: one value per ciphertext (``batch=False``), what a rotation-based sum over
axis 0 leaves (only with Galois keys).

Depth. Every plaintext multiplication (scalar, array or matmul) rescales and uses
one level of the modulus chain; ``len(coeff_mod_bit_sizes) - 2`` levels exist (2
for the default [60, 40, 40, 60]: e.g. matmul then one multiply). A further
multiplication raises :class:`~protocols.he.base.DepthExceededError` up front.
Additions, negation and sums use no level.

Magnitude. Values are tracked by a public power-of-two bound; any lane must stay
below ``2^(q0_bits - scale_bits - 1)`` (2^19 by default: the last level's prime
q0 must hold value * 2^scale) or the operation raises EncodingOverflowError.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import tenseal as ts

from protocols.errors import EncodingOverflowError, InputError, SecureFLError
from protocols.he.base import DepthExceededError, EncryptedArray, bound_exponent

if TYPE_CHECKING:
    from protocols.he.ckks import CKKSPublicContext

LAYOUTS = ("batched", "folded", "flat")


def encrypt_batched(context: ts.Context, lanes: np.ndarray) -> ts.CKKSTensor:
    """``ckks_tensor(batch=True)`` of lanes with axis 0 in the slots.

    TenSEAL 0.3.18 replicates the first row when every non-batch axis has size 1
    (e.g. shape (3, 1) decrypts as three copies of row 0), so rows are encrypted
    as a flat (rows, size) or (rows,) array and reshaped afterwards.
    """
    rows, rest = lanes.shape[0], list(lanes.shape[1:])
    size = math.prod(rest)
    flat = lanes.reshape(rows, size) if size > 1 else lanes.reshape(rows)
    tensor = ts.ckks_tensor(context, flat, batch=True)
    return tensor if list(tensor.shape) == rest else tensor.reshape(rest)


def _tenseal_op(method: Callable[..., "CKKSArray"]) -> Callable[..., "CKKSArray"]:
    """TenSEAL's own refusals (a scale mismatch or overflow, as a peer's ciphertext at another scale
    brings) as one InputError, not a raw ValueError from inside the library."""
    @functools.wraps(method)
    def run(self: "CKKSArray", *args: Any, **kwargs: Any) -> "CKKSArray":
        try:
            return method(self, *args, **kwargs)
        except SecureFLError:
            raise
        except (ValueError, RuntimeError) as exc:
            raise InputError(f"TenSEAL refused {method.__name__.strip('_')} on a CKKS array: {exc}") from None
    return run


class CKKSArray(EncryptedArray):
    """An encrypted float array under one CKKS public context (see module doc)."""

    scheme = "ckks"

    def __init__(self, context: "CKKSPublicContext", shape: tuple[int, ...], tensor: ts.CKKSTensor,
                 *, layout: str, lane_count: int, level: int, bound: float) -> None:
        """Internal: arrays come from ``encrypt``, operations and ``from_fields``."""
        limit = context.config.value_limit
        if not bound <= limit:
            raise EncodingOverflowError(
                f"CKKS values may reach {bound:g}, over the representable {limit:g} "
                f"(2^(q0_bits - scale_bits - 1)); lower max_abs or the multipliers")
        self.context, self.shape, self.tensor = context, tuple(shape), tensor
        self.layout, self.lane_count, self.level = layout, lane_count, level
        self._bound_exp = bound_exponent(bound)

    @property
    def bound(self) -> float:
        return math.ldexp(1.0, self._bound_exp)

    @property
    def lanes_packed_on_axis0(self) -> bool:
        return self.layout == "batched"

    @property
    def lane_shape(self) -> tuple[int, ...]:
        return (self.lane_count, *self.shape) if self.layout == "folded" else self.shape

    def lanes_to_values(self, lanes: np.ndarray) -> np.ndarray:
        return lanes.sum(axis=0) if self.layout == "folded" else lanes

    def values_to_lanes(self, values: np.ndarray) -> np.ndarray:
        """Lanes holding logical values (folded: all in lane 0, the rest zero)."""
        if self.layout != "folded":
            return np.array(values, dtype=np.float64)
        lanes = np.zeros(self.lane_shape)
        lanes[0] = values
        return lanes

    def encrypt_lanes(self, lanes: np.ndarray, bound: float) -> "CKKSArray":
        """Fresh encryption of float lanes in this array's layout (for masks and plain adds)."""
        ctx = self.context.tenseal_context
        if self.layout == "flat":
            tensor = ts.ckks_tensor(ctx, np.reshape(lanes, (-1,)), batch=False).reshape(list(self.shape))
        else:
            tensor = encrypt_batched(ctx, lanes)
        return self._like(tensor, level=0, bound=bound)

    def _like(self, tensor: ts.CKKSTensor, *, shape: tuple[int, ...] | None = None,
              layout: str | None = None, level: int | None = None,
              bound: float | None = None) -> "CKKSArray":
        layout = self.layout if layout is None else layout
        return CKKSArray(self.context, self.shape if shape is None else shape, tensor,
                         layout=layout, lane_count=1 if layout == "flat" else self.lane_count,
                         level=self.level if level is None else level,
                         bound=self.bound if bound is None else bound)

    def _next_level(self) -> int:
        depth = self.context.config.max_depth
        if self.level + 1 > depth:
            raise DepthExceededError(
                f"CKKS modulus chain exhausted: this array used {self.level} of {depth} "
                f"multiplicative levels (coeff_mod_bit_sizes="
                f"{list(self.context.config.coeff_mod_bit_sizes)}); decrypt and re-encrypt, or "
                "configure more middle primes, e.g. [60, 40, 40, 40, 60]")
        return self.level + 1

    def _tenseal_axis(self, axis: int) -> int:
        return axis + 1 if self.layout == "folded" else axis

    # --- operations -----------------------------------------------------------
    @_tenseal_op
    def _add_cipher(self, other: EncryptedArray) -> "CKKSArray":
        if not isinstance(other, CKKSArray) or other.layout != self.layout \
                or other.lane_count != self.lane_count:
            raise InputError("cannot add CKKS arrays of different layouts (batched, folded, flat)")
        return self._like(self.tensor + other.tensor, level=max(self.level, other.level),
                          bound=self.bound + other.bound)

    @_tenseal_op
    def _add_plain(self, plain: np.ndarray) -> "CKKSArray":
        bound = self.bound + float(np.max(np.abs(plain), initial=0.0))
        if self.layout == "flat":
            return self._like(self.tensor + np.array(plain), bound=bound)
        if self.layout == "batched" and np.all(plain == plain[:1]):
            row = plain[0]
            return self._like(self.tensor + (float(row) if row.ndim == 0 else np.array(row)),
                              bound=bound)
        addend = self.encrypt_lanes(self.values_to_lanes(plain), float(np.max(np.abs(plain))))
        return self._like(self.tensor + addend.tensor, bound=bound)

    @_tenseal_op
    def _mul_plain(self, plain: np.ndarray) -> "CKKSArray":
        level = self._next_level()
        factor = plain[0] if self.layout == "batched" else plain
        bound = self.bound * float(np.max(np.abs(factor), initial=0.0))
        self._like(self.tensor, bound=bound)  # overflow check before any work
        operand: Any = float(factor) if factor.ndim == 0 else np.array(factor)
        return self._like(self.tensor * operand, level=level, bound=bound)

    @_tenseal_op
    def _matmul_plain(self, matrix: np.ndarray) -> "CKKSArray":
        level = self._next_level()
        bound = self.bound * float(np.max(np.abs(matrix).sum(axis=0), initial=0.0))
        self._like(self.tensor, bound=bound)  # overflow check before any work
        d_in, d_out = matrix.shape
        if self.layout == "batched":
            tensor = self.tensor.reshape([1, d_in]).mm(matrix).reshape([d_out])
        else:
            tensor = self.tensor.mm(matrix)
        return self._like(tensor, shape=(self.shape[0], d_out), level=level, bound=bound)

    @_tenseal_op
    def _sum_axis(self, axis: int, reveal_lane_sums: bool) -> "CKKSArray":
        shape = self.shape[:axis] + self.shape[axis + 1:]
        bound = self.bound * self.shape[axis]
        if self.layout == "batched" and axis == 0:
            if self.context.tenseal_context.has_galois_keys():
                return self._like(self.tensor.sum(0), shape=shape, layout="flat", bound=bound)
            if self.shape[0] > 1 and not reveal_lane_sums:
                raise InputError(
                    "summing a batched CKKS array over axis 0 without Galois keys leaves the sum "
                    "over slots to the key owner, who then sees every row; pass "
                    "reveal_lane_sums=True to accept that, mask first, or set galois_keys=True")
            return CKKSArray(self.context, shape, self.tensor, layout="folded",
                             lane_count=self.shape[0], level=self.level, bound=bound)
        tensor = self.tensor.sum(self._tenseal_axis(axis))
        return self._like(tensor, shape=shape, bound=bound)

    @_tenseal_op
    def _negate(self) -> "CKKSArray":
        return self._like(-self.tensor)

    # --- wire -----------------------------------------------------------------
    def to_fields(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "key_id": self.context.key_id, "shape": list(self.shape),
                "layout": self.layout, "lane_count": self.lane_count, "level": self.level,
                "bound_exp": self._bound_exp, "tensor": self.tensor.serialize()}
