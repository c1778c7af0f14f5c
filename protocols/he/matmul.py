"""Ciphertext grid (R, d_in) times an integer matrix (d_in, d_out), for Paillier.

``out[r, k] = prod_j grid[r, j] ^ W[j, k] mod n^2``. Each ciphertext is raised to
d_out small exponents (the fixed-point weights, ~30 bits), so it gets its own
window table (window size chosen to minimise multiplications for that exponent
length and count) and every power costs about bits/w multiplications instead of a
full square-and-multiply. Negative weights accumulate separately and are inverted
once per output: ``out = pos * neg^-1``. Work is split over (row, column-chunk)
tasks in threads (gmpy2 releases the GIL; see :mod:`protocols.he.parallel`).
"""

from __future__ import annotations

from typing import Sequence

import gmpy2
import numpy as np
from gmpy2 import mpz

from protocols.he.parallel import parallel_map, resolve_workers


def best_window(exponent_bits: int, count: int) -> int:
    """The window width minimising table cost plus per-exponent lookups."""
    def cost(width: int) -> int:
        windows = -(-exponent_bits // width)
        return windows * ((1 << width) - 1) + count * windows
    return min(range(1, 9), key=cost)


def powers(base: mpz, exponents: Sequence[int], modulus: mpz) -> list[mpz]:
    """``[base^e mod modulus for e in exponents]`` for non-negative e, via a window table."""
    top = max((int(e).bit_length() for e in exponents), default=0)
    if top == 0:
        return [mpz(1)] * len(exponents)
    width = best_window(top, len(exponents))
    mask, rows, window_base = (1 << width) - 1, [], base % modulus  # every entry reduced, e = 1 too
    for _ in range(-(-top // width)):
        row = [mpz(1), window_base]
        for _ in range(2, 1 << width):
            row.append(row[-1] * window_base % modulus)
        rows.append(row)
        window_base = row[-1] * window_base % modulus
    out = []
    for e in exponents:
        e, acc, index = int(e), None, 0
        while e:
            digit = e & mask
            if digit:
                acc = rows[index][digit] if acc is None else acc * rows[index][digit] % modulus
            e >>= width
            index += 1
        out.append(mpz(1) if acc is None else acc)
    return out


def _task(grid: np.ndarray, weights: np.ndarray, modulus: mpz,
          row: int, cols: range) -> tuple[int, list[mpz], list[mpz]]:
    """Partial products over input columns ``cols`` for one grid row."""
    d_out = weights.shape[1]
    pos, neg = [mpz(1)] * d_out, [mpz(1)] * d_out
    for j in cols:
        exps = [int(v) for v in weights[j]]
        for k, value in enumerate(powers(grid[row, j], [abs(e) for e in exps], modulus)):
            if exps[k] > 0:
                pos[k] = pos[k] * value % modulus
            elif exps[k] < 0:
                neg[k] = neg[k] * value % modulus
    return row, pos, neg


def matmul_grid(grid: np.ndarray, weights: np.ndarray, modulus: mpz,
                workers: int | None) -> np.ndarray:
    """The (R, d_out) ciphertext grid of ``grid @ weights`` (see module doc)."""
    rows, d_in = grid.shape
    d_out = weights.shape[1]
    threads = resolve_workers(workers)
    splits = max(1, min(d_in, -(-2 * threads // max(rows, 1))))
    step = -(-d_in // splits)
    tasks = [(r, range(s, min(s + step, d_in))) for r in range(rows) for s in range(0, d_in, step)]
    parts = parallel_map(lambda chunk: [_task(grid, weights, modulus, r, c) for r, c in chunk],
                         tasks, workers, min_items=1)
    pos = [[mpz(1)] * d_out for _ in range(rows)]
    neg = [[mpz(1)] * d_out for _ in range(rows)]
    for r, p, q in parts:
        pos[r] = [a * b % modulus for a, b in zip(pos[r], p)]
        neg[r] = [a * b % modulus for a, b in zip(neg[r], q)]
    out = np.empty((rows, d_out), dtype=object)
    for r in range(rows):
        out[r] = [a if b == 1 else a * gmpy2.invert(b, modulus) % modulus
                  for a, b in zip(pos[r], neg[r])]
    return out
