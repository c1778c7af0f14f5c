"""Slot layouts for packed CKKS matrix products ``Y = X @ M`` (X encrypted, M plain).

The interactive layer needs three products per training step, each of the form
``Y = X @ M`` with X encrypted by the key owner and M in the evaluator's clear:
``a @ W~`` (forward), ``a.T @ dL/dz`` (weight gradient) and ``eps_acc @ -dL/dz.T``
(input gradient). This module holds the layout arithmetic, in numpy only, so the
index algebra is testable without any encryption.

Layout (``C`` = cyclic length, a power of two; ``R = slots / C`` lanes per position).
A ciphertext holds a block of X: slot ``p * R + r`` carries X[row r of the block,
contraction index p of the chunk]. Rotating the slot vector left by ``d * R``
shifts the contraction index cyclically: ``rot_d(X)[p, r] = X[(p + d) % C, r]``.

Product (generalised diagonal method with a fold). With ``D`` diagonals and fold
``F = C / D`` the evaluator computes, for every position p of the output block::

    Y'[p, r] = sum_{d < D} rot_d(X)[p, r] * diag_d[p],   diag_d[p] = M[(p + d) % C, p % D]

Output k of the block is ``sum_f Y'[k + f * D]`` (the F copies together cover every
contraction index exactly once); the key owner adds the copies after decrypting,
which costs nothing because every lane it sees is masked. Baby-step/giant-step:
``d = g * s + t`` and ``Y' = sum_g rot_{g s}(sum_t rot_t(X) * roll(diag_{g s + t}, g s))``,
so an input ciphertext is rotated ``s - 1`` times and an output ``D / s - 1`` times
(Horner), every rotation by a power of two (one key switch each).

Complex slots carry two real values, so one multiplication does twice the work:
``pair="rows"`` puts two rows of X into the real and imaginary parts (M is real and
the same for both); ``pair="outputs"`` keeps X real and puts the diagonals of two
output blocks into one complex plaintext (``x * (m1 + i m2) = x m1 + i x m2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from protocols.errors import InputError

PAIRS = ("rows", "outputs")


def next_pow2(value: int) -> int:
    """The smallest power of two >= value (1 for value <= 1)."""
    return 1 << max(0, (int(value) - 1).bit_length())


@dataclass(frozen=True)
class Plan:
    """How one product ``(rows x contraction) @ (contraction x outputs)`` is laid out."""

    slots: int
    rows: int
    contraction: int
    outputs: int
    cyclic: int      # C: cyclic length of the contraction index in one ciphertext
    diagonals: int   # D: diagonals (and output positions) per output block
    baby: int        # s: baby steps; giant steps = D / s
    pair: str        # "rows" or "outputs": what the imaginary part carries

    @property
    def lanes(self) -> int:
        """R: slots per contraction position (rows of X per ciphertext, per part)."""
        return self.slots // self.cyclic

    @property
    def fold(self) -> int:
        return self.cyclic // self.diagonals

    @property
    def giant(self) -> int:
        return self.diagonals // self.baby

    @property
    def rows_per_ct(self) -> int:
        return self.lanes * (2 if self.pair == "rows" else 1)

    @property
    def row_blocks(self) -> int:
        return -(-self.rows // self.rows_per_ct)

    @property
    def chunks(self) -> int:
        return -(-self.contraction // self.cyclic)

    @property
    def out_blocks(self) -> int:
        return -(-self.outputs // self.diagonals)

    @property
    def out_cts(self) -> int:
        """Output ciphertexts per row block."""
        return self.out_blocks if self.pair == "rows" else -(-self.out_blocks // 2)

    @property
    def n_inputs(self) -> int:
        return self.row_blocks * self.chunks

    @property
    def n_outputs(self) -> int:
        return self.row_blocks * self.out_cts

    def rotations(self) -> int:
        """Key switches the evaluation costs (the dominant cost)."""
        return self.n_inputs * (self.baby - 1) + self.n_outputs * (self.giant - 1)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def make_plan(slots: int, rows: int, contraction: int, outputs: int) -> Plan:
    """The layout for one product shape, with the baby step minimising rotations."""
    slots, rows = _positive("slots", slots), _positive("rows", rows)
    contraction, outputs = _positive("contraction", contraction), _positive("outputs", outputs)
    if slots & (slots - 1):
        raise InputError(f"slots must be a power of two, got {slots}")
    cyclic = min(next_pow2(contraction), slots)
    diagonals = min(next_pow2(outputs), cyclic)
    pair = "outputs" if -(-outputs // diagonals) >= 2 else "rows"
    candidates = [Plan(slots, rows, contraction, outputs, cyclic, diagonals, 1 << e, pair)
                  for e in range(diagonals.bit_length())]
    return min(candidates, key=Plan.rotations)


def pack_input(x: np.ndarray, plan: Plan) -> np.ndarray:
    """Slot vectors (n_inputs, slots), complex, of X in ``plan``'s layout; order [block][chunk]."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (plan.rows, plan.contraction):
        raise InputError(f"expected X of shape {(plan.rows, plan.contraction)}, got {x.shape}")
    c, r, q = plan.cyclic, plan.lanes, plan.chunks
    parts = 2 if plan.pair == "rows" else 1
    padded = np.zeros((plan.row_blocks * parts * r, q * c))
    padded[:plan.rows, :plan.contraction] = x
    blocks = padded.reshape(plan.row_blocks, parts, r, q, c).transpose(0, 1, 3, 4, 2)
    values = blocks[:, 0] + (1j * blocks[:, 1] if parts == 2 else 0.0)
    return np.ascontiguousarray(values.reshape(plan.row_blocks * q, plan.slots), dtype=np.complex128)


def diagonals(m: np.ndarray, plan: Plan) -> np.ndarray:
    """Pre-rotated diagonal slot vectors, shape (chunks, out_cts, D, slots), complex.

    Entry ``[q, o, g * s + t]`` multiplies ``rot_t`` of input chunk q in giant group g
    of output ciphertext o (see the module doc).
    """
    m = np.asarray(m, dtype=np.float64)
    if m.shape != (plan.contraction, plan.outputs):
        raise InputError(f"expected M of shape {(plan.contraction, plan.outputs)}, got {m.shape}")
    c, d, q, nb = plan.cyclic, plan.diagonals, plan.chunks, plan.out_blocks
    padded = np.zeros((q * c, nb * d))
    padded[:plan.contraction, :plan.outputs] = m
    table = padded.reshape(q, c, nb, d).transpose(0, 2, 1, 3)  # [chunk, block, c, o]
    steps, positions = np.arange(d)[:, None], np.arange(c)[None, :]
    shift = (steps // plan.baby) * plan.baby  # the giant offset g * s of diagonal d
    source = (positions - shift) % c  # pre-rotation: roll right by g * s
    rows = (source + steps) % c
    cols = np.broadcast_to(source % d, rows.shape)
    diag = table[:, :, rows, cols]  # [chunk, block, d, position]
    diag = np.repeat(diag, plan.lanes, axis=-1)
    if plan.pair == "rows":
        return diag.astype(np.complex128)
    out = np.zeros((q, plan.out_cts, d, plan.slots), dtype=np.complex128)
    out += diag[:, 0::2]
    out[:, :diag[:, 1::2].shape[1]] += 1j * diag[:, 1::2]
    return out


def _block_values(lanes: np.ndarray, plan: Plan) -> np.ndarray:
    """Fold-summed output values (row_blocks, out_cts, D, R) of the output ciphertexts."""
    lanes = np.asarray(lanes)
    if lanes.shape != (plan.n_outputs, plan.slots):
        raise InputError(f"expected output lanes of shape {(plan.n_outputs, plan.slots)}, "
                         f"got {lanes.shape}")
    shaped = lanes.reshape(plan.row_blocks, plan.out_cts, plan.fold, plan.diagonals, plan.lanes)
    return shaped.sum(axis=2)


def unpack_output(lanes: np.ndarray, plan: Plan) -> np.ndarray:
    """Y (rows x outputs) from the complex lanes (n_outputs, slots) of the output ciphertexts."""
    v = _block_values(lanes, plan)
    nb, r, d = plan.row_blocks, plan.lanes, plan.diagonals
    if plan.pair == "rows":
        full = np.stack([v.real, v.imag], axis=1)  # [block, part, oc, k, r]
        y = full.transpose(0, 1, 4, 2, 3).reshape(nb * 2 * r, plan.out_cts * d)
    else:
        full = np.stack([v.real, v.imag], axis=2)  # [block, oc, part, k, r]
        y = full.transpose(0, 4, 1, 2, 3).reshape(nb * r, plan.out_cts * 2 * d)
    return np.ascontiguousarray(y[:plan.rows, :plan.outputs])


def pack_output(y: np.ndarray, plan: Plan) -> np.ndarray:
    """Complex lanes (n_outputs, slots) that :func:`unpack_output` maps to Y (fold copy 0)."""
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (plan.rows, plan.outputs):
        raise InputError(f"expected Y of shape {(plan.rows, plan.outputs)}, got {y.shape}")
    nb, r, d, oc = plan.row_blocks, plan.lanes, plan.diagonals, plan.out_cts
    if plan.pair == "rows":
        padded = np.zeros((nb * 2 * r, oc * d))
        padded[:plan.rows, :plan.outputs] = y
        full = padded.reshape(nb, 2, r, oc, d).transpose(0, 1, 3, 4, 2)  # [block, part, oc, k, r]
        v = full[:, 0] + 1j * full[:, 1]
    else:
        padded = np.zeros((nb * r, oc * 2 * d))
        padded[:plan.rows, :plan.outputs] = y
        full = padded.reshape(nb, r, oc, 2, d).transpose(0, 2, 3, 4, 1)  # [block, oc, part, k, r]
        v = full[:, :, 0] + 1j * full[:, :, 1]
    lanes = np.zeros((nb, oc, plan.fold, d, r), dtype=np.complex128)
    lanes[:, :, 0] = v
    return lanes.reshape(plan.n_outputs, plan.slots)


def pack_every_copy(y: np.ndarray, plan: Plan) -> np.ndarray:
    """:func:`pack_output` with Y in every fold copy, not only copy 0 (lanes that hold a sum
    already folded, which :func:`unpack_output` then counts ``fold`` times)."""
    lanes = pack_output(y, plan).reshape(plan.n_outputs, plan.fold, -1)
    lanes[:] = lanes[:, :1]
    return lanes.reshape(plan.n_outputs, plan.slots)


def read_lanes(plan: Plan) -> np.ndarray:
    """1 in the real (imaginary) part of every lane :func:`unpack_output` reads, in every fold
    copy, 0 elsewhere: complex (n_outputs, slots). The other lanes are padding."""
    return pack_every_copy(np.ones((plan.rows, plan.outputs)), plan)


def zero_sum_lanes(plan: Plan, noise: np.ndarray) -> np.ndarray:
    """Lanes whose fold copies carry ``noise`` and sum to zero: hides partial sums for free."""
    shaped = np.array(noise, dtype=np.complex128).reshape(
        plan.n_outputs, plan.fold, plan.diagonals * plan.lanes)
    shaped[:, 0] = -shaped[:, 1:].sum(axis=1)
    return shaped.reshape(plan.n_outputs, plan.slots)


def schedule(plan: Plan) -> Iterator[tuple[int, int]]:
    """(giant group, baby step) pairs of the diagonals, giant groups from last to first."""
    for g in reversed(range(plan.giant)):
        for t in range(plan.baby):
            yield g, t


def simulate(x: np.ndarray, m: np.ndarray, plan: Plan) -> np.ndarray:
    """The packed evaluation on clear slot vectors (reference for the encrypted one)."""
    inputs = pack_input(x, plan).reshape(plan.row_blocks, plan.chunks, plan.slots)
    diags = diagonals(m, plan)
    outs = []
    for block in inputs:
        baby = [[np.roll(v, -t * plan.lanes) for t in range(plan.baby)] for v in block]
        for o in range(plan.out_cts):
            acc = np.zeros(plan.slots, dtype=np.complex128)
            for g in reversed(range(plan.giant)):
                inner = sum(baby[q][t] * diags[q, o, g * plan.baby + t]
                            for q in range(plan.chunks) for t in range(plan.baby))
                acc = inner + np.roll(acc, -plan.baby * plan.lanes)
            outs.append(acc)
    return unpack_output(np.array(outs), plan)


__all__ = ["PAIRS", "Plan", "diagonals", "make_plan", "next_pow2", "pack_every_copy", "pack_input", "pack_output",
           "read_lanes", "schedule", "simulate", "unpack_output", "zero_sum_lanes"]

