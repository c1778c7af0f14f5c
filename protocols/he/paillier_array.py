"""Encrypted arrays under Paillier: a grid of ciphertexts, each packing lanes.

Layout. A *packed* array of shape (rows, *rest) has a grid of shape
(ceil(rows / m), *rest): cell (b, ...) packs rows b*m .. b*m+m-1 of one column as m
lanes (zero padding in the last block). A *folded* array (the result of summing
over axis 0, or an encrypted scalar) has one cell per element whose value is the
sum of the cell's lanes, finished by the key owner after decryption.

Bookkeeping. ``scale_bits`` is the fixed-point exponent (it adds up when multiplying
by fixed-point plaintexts; the key owner rescales on decode). ``bound_bits`` is a
public bound ``|lane| < 2^bound_bits`` updated by every operation; an operation that
would push it past the slot's ``lane_bits - 1`` raises EncodingOverflowError before
computing anything, so lanes never wrap silently.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import gmpy2
import numpy as np
from gmpy2 import mpz

from protocols.errors import EncodingOverflowError, InputError
from protocols.he.base import EncryptedArray, bits_for
from protocols.he.fixedpoint import encode_fixed, max_abs_int, pack
from protocols.he.matmul import matmul_grid
from protocols.he.parallel import parallel_map

if TYPE_CHECKING:
    from protocols.he.paillier import PaillierPublicContext

_MIN_PARALLEL = 64  # cells per thread below which threads cost more than they save


class PaillierArray(EncryptedArray):
    """An encrypted float array under one Paillier public key (see module doc)."""

    scheme = "paillier"

    def __init__(self, context: "PaillierPublicContext", shape: tuple[int, ...], grid: np.ndarray,
                 *, packed: bool, scale_bits: int, bound_bits: int) -> None:
        """Internal: arrays come from ``encrypt``, operations and ``from_fields``."""
        if bound_bits > context.lane_bits - 1:
            raise EncodingOverflowError(
                f"result needs {bound_bits}-bit lanes but a {context.lane_bits}-bit slot holds "
                f"{context.lane_bits - 1}; lower precision_bits or max_abs, raise slot_bits, or "
                "use pack=False")
        self.context, self.shape, self.grid = context, tuple(shape), grid
        self.packed, self.scale_bits, self.bound_bits = packed, scale_bits, bound_bits

    # --- layout ---------------------------------------------------------------
    @property
    def lanes(self) -> int:
        return self.context.lanes

    @property
    def lanes_packed_on_axis0(self) -> bool:
        return self.packed and self.lanes > 1

    @property
    def bound(self) -> float:
        return math.ldexp(1.0, self.bound_bits - self.scale_bits)

    @property
    def lane_shape(self) -> tuple[int, ...]:
        """Shape of the array of all lanes (see :meth:`lanes_to_values`)."""
        if self.packed:
            return (self.grid.shape[0] * self.lanes, *self.grid.shape[1:])
        return (self.lanes, *self.grid.shape)

    def values_to_lanes(self, ints: np.ndarray) -> np.ndarray:
        """Place logical integers into lanes: padded rows (packed) or lane 0 (folded)."""
        lanes = np.zeros(self.lane_shape, dtype=object)
        if self.packed:
            lanes[:self.shape[0]] = ints
        else:
            lanes[0] = ints
        return lanes

    def lanes_to_values(self, lanes: np.ndarray) -> np.ndarray:
        """Logical integers from lanes: drop padding (packed) or add lanes (folded)."""
        return lanes[:self.shape[0]] if self.packed else lanes.sum(axis=0)

    def _lanes_to_cells(self, lanes: np.ndarray) -> np.ndarray:
        if self.packed:
            blocks = lanes.reshape(self.grid.shape[0], self.lanes, *self.grid.shape[1:])
            return np.moveaxis(blocks, 1, -1).reshape(-1, self.lanes)
        return np.moveaxis(lanes, 0, -1).reshape(-1, self.lanes)

    def cells_to_lanes(self, cells: Sequence[Sequence[int]]) -> np.ndarray:
        """Inverse of the cell packing: per-cell lane lists (grid order) to the lane array."""
        array = np.empty((len(cells), self.lanes), dtype=object)
        array[:] = [list(cell) for cell in cells]
        array = array.reshape(*self.grid.shape, self.lanes)
        if self.packed:
            return np.moveaxis(array, -1, 1).reshape(self.lane_shape)
        return np.moveaxis(array, -1, 0)

    def _packed_plaintexts(self, lanes: np.ndarray) -> list[int]:
        n, bits = self.context.key.n, self.context.lane_bits
        return [pack(cell, bits) % n for cell in self._lanes_to_cells(lanes)]

    def _like(self, grid: np.ndarray, *, shape: tuple[int, ...] | None = None,
              packed: bool | None = None, scale_bits: int | None = None,
              bound_bits: int | None = None) -> "PaillierArray":
        return PaillierArray(self.context, self.shape if shape is None else shape, grid,
                             packed=self.packed if packed is None else packed,
                             scale_bits=self.scale_bits if scale_bits is None else scale_bits,
                             bound_bits=self.bound_bits if bound_bits is None else bound_bits)

    def _cellwise(self, fn: Any, items: Sequence[Any], shape: tuple[int, ...]) -> np.ndarray:
        out = np.empty(len(items), dtype=object)
        out[:] = parallel_map(fn, items, self.context.config.workers, min_items=_MIN_PARALLEL)
        return out.reshape(shape)

    def encrypt_lanes(self, lanes: np.ndarray, bound: int) -> "PaillierArray":
        """Fresh encryption of integer lanes ``|lane| <= bound`` in this layout and scale."""
        cts = self.context.key.encrypt_plaintexts(self._packed_plaintexts(lanes),
                                                  self.context.config.workers)
        grid = np.empty(len(cts), dtype=object)
        grid[:] = cts
        return self._like(grid.reshape(self.grid.shape), bound_bits=int(bound).bit_length())

    # --- operations -----------------------------------------------------------
    def _rescaled(self, scale_bits: int) -> "PaillierArray":
        """The same values at a larger fixed-point scale (multiply lanes by 2^d)."""
        shift = scale_bits - self.scale_bits
        if shift == 0:
            return self
        nsquare, factor = self.context.key.nsquare, mpz(1) << shift
        grid = self._cellwise(lambda cells: gmpy2.powmod_base_list(list(cells), factor, nsquare),
                              list(self.grid.reshape(-1)), self.grid.shape)
        return self._like(grid, scale_bits=scale_bits, bound_bits=self.bound_bits + shift)

    def _add_cipher(self, other: EncryptedArray) -> "PaillierArray":
        if not isinstance(other, PaillierArray) or other.packed != self.packed:
            raise InputError("cannot add a packed and a folded (lane-summed) Paillier array")
        scale = max(self.scale_bits, other.scale_bits)
        a, b = self._rescaled(scale), other._rescaled(scale)
        nsquare = self.context.key.nsquare
        pairs = list(zip(a.grid.reshape(-1), b.grid.reshape(-1)))
        grid = self._cellwise(lambda chunk: [x * y % nsquare for x, y in chunk], pairs,
                              self.grid.shape)
        return a._like(grid, bound_bits=max(a.bound_bits, b.bound_bits) + 1)

    def _add_plain(self, plain: np.ndarray) -> "PaillierArray":
        ints = encode_fixed(plain, self.scale_bits)
        bound = ((1 << self.bound_bits) + max_abs_int(ints)).bit_length()
        key = self.context.key
        factors = [1 + p * key.n for p in self._packed_plaintexts(self.values_to_lanes(ints))]
        pairs = list(zip(self.grid.reshape(-1), factors))
        grid = self._cellwise(lambda chunk: [c * f % key.nsquare for c, f in chunk], pairs,
                              self.grid.shape)
        return self._like(grid, bound_bits=bound)

    def _encode_multiplier(self, plain: np.ndarray) -> tuple[np.ndarray, int]:
        """Integers and their scale: exact at scale 0 when all integral, else fixed point."""
        if np.all(plain == np.rint(plain)) and np.all(np.abs(plain) < 2.0 ** 53):
            return encode_fixed(plain, 0), 0
        scale = self.context.config.precision_bits
        return encode_fixed(plain, scale), scale

    def _mul_plain(self, plain: np.ndarray) -> "PaillierArray":
        by_row = self.lanes_packed_on_axis0  # one multiplier per ciphertext: row 0 suffices
        ints, scale = self._encode_multiplier(plain[:1] if by_row else plain)
        bound = self.bound_bits + max_abs_int(ints).bit_length()
        exps = np.broadcast_to(ints, self.grid.shape) if by_row else ints
        nsquare = self.context.key.nsquare
        self._like(self.grid, bound_bits=bound)  # overflow check before any work

        def power(chunk: Sequence[tuple[mpz, int]]) -> list[mpz]:
            out = []
            for c, e in chunk:
                r = gmpy2.powmod(c, abs(e), nsquare)
                out.append(gmpy2.invert(r, nsquare) if e < 0 else r)
            return out

        pairs = list(zip(self.grid.reshape(-1), np.asarray(exps).reshape(-1)))
        grid = self._cellwise(power, pairs, self.grid.shape)
        return self._like(grid, scale_bits=self.scale_bits + scale, bound_bits=bound)

    def _matmul_plain(self, matrix: np.ndarray) -> "PaillierArray":
        ints, scale = self._encode_multiplier(matrix)
        column_l1 = max((sum(abs(int(v)) for v in ints[:, k]) for k in range(ints.shape[1])),
                        default=0)
        bound = self.bound_bits + column_l1.bit_length()
        out_shape = (self.shape[0], matrix.shape[1])
        self._like(self.grid, bound_bits=bound)  # overflow check before any work
        grid = matmul_grid(self.grid, ints, self.context.key.nsquare, self.context.config.workers)
        return self._like(grid, shape=out_shape, scale_bits=self.scale_bits + scale,
                          bound_bits=bound)

    def _sum_axis(self, axis: int, reveal_lane_sums: bool) -> "PaillierArray":
        folding = self.packed and axis == 0
        if folding and self.lanes > 1 and self.shape[0] > 1 and not reveal_lane_sums:
            raise InputError(
                "summing a packed Paillier array over axis 0 leaves the sum over each ciphertext's "
                f"{self.lanes} lanes to the key owner, who then sees the per-lane partial sums; "
                "pass reveal_lane_sums=True to accept that (or mask first, or use pack=False)")
        count = self.grid.shape[axis] if folding else self.shape[axis]
        nsquare = self.context.key.nsquare
        grid = np.take(self.grid, 0, axis=axis)
        for index in range(1, self.grid.shape[axis]):
            grid = grid * np.take(self.grid, index, axis=axis) % nsquare
        grid = np.asarray(grid, dtype=object)
        shape = self.shape[:axis] + self.shape[axis + 1:]
        return self._like(grid, shape=shape, packed=self.packed and not folding,
                          bound_bits=self.bound_bits + bits_for(count))

    def _negate(self) -> "PaillierArray":
        nsquare = self.context.key.nsquare
        grid = self._cellwise(lambda chunk: [gmpy2.invert(c, nsquare) for c in chunk],
                              list(self.grid.reshape(-1)), self.grid.shape)
        return self._like(grid)

    # --- wire -----------------------------------------------------------------
    def to_fields(self) -> dict[str, Any]:
        width = self.context.key.ciphertext_bytes
        data = b"".join(int(c).to_bytes(width, "big") for c in self.grid.reshape(-1))
        return {"scheme": self.scheme, "key_id": self.context.key_id, "shape": list(self.shape),
                "packed": self.packed, "scale_bits": self.scale_bits,
                "bound_bits": self.bound_bits, "ciphertexts": data}


def grid_shape(shape: tuple[int, ...], lanes: int, packed: bool) -> tuple[int, ...]:
    """The ciphertext grid of a logical shape (see module doc)."""
    if packed:
        return (-(-shape[0] // lanes), *shape[1:])
    return shape


def fields_scalar(fields: Mapping[str, Any], name: str, kind: type) -> Any:
    """A typed scalar field (bools are not ints here), or None when absent or mistyped."""
    value = fields.get(name)
    if kind is int and isinstance(value, bool):
        return None
    return value if isinstance(value, kind) else None
