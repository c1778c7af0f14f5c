"""The evaluator's side of the packed CKKS products: rotations, plaintext diagonals, masks.

The parameters, the scales and the masking argument are those of
:mod:`protocols.interactive.ckks_engine` (the key owner's side and the overview);
the slot layout is :mod:`protocols.interactive.packing`'s.

Flooding the low bits. The key owner decrypts a whole polynomial, not just the
decoded slots. A term encoded from doubles at scale 2^85 has coefficients rounded to
53 significant bits, so a mask or clear term of ~2^100 leaves the low ~48 bits of
every coefficient to the exact product (and its error), which only the evaluator's
plaintexts and the key owner's own ciphertexts determine. :meth:`PackedEvaluator._floods`
adds integer polynomials drawn in the coefficient domain (encoded at scale 1, whose
coefficients are exact integers below 2^53), uniform modulo the coarsest rounding
step of the term they cover; their slot values are known to the evaluator, which
removes them from the mask it keeps or from the clear term it adds, so no precision
is lost.

A revealed product (the input gradient) gets two more defences, since the key owner
reads it and decodes every slot: a uniform guard in the lanes it is not meant to read
(:meth:`PackedEvaluator.revealed`) and re-randomised inputs
(:meth:`PackedEvaluator.rerandomize`). What they stop is measured in
:mod:`benchmarks.key_owner`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
from tenseal import sealapi

from protocols.errors import DecodeError, EncodingOverflowError, InputError, ProtocolError
from protocols.he import CKKSPublicContext
from protocols.he.ckks_wire import left_rotation_elements
from protocols.interactive.ckks_engine import MASK_BITS, PLAIN_SCALE_BITS, SealHandles, bound_exponent
from protocols.interactive.packing import Plan, diagonals, pack_every_copy, read_lanes, unpack_output
from protocols.interactive.sealwire import ciphertexts_fields, ciphertexts_from_fields
from protocols.randomness import os_uniform

FLOOD_BITS = 48
"""Coefficient size (std, log2) of a flood's first part: exact integers, uniform modulo 2^45."""
FLOOD_STEP = 44
"""Bits between parts: each part's rounding step (its size less 52 bits) stays under the
modulus to which the parts below it are already uniform."""

Prepared = tuple[dict[tuple[int, int, int], Any], int]
"""Encoded plaintext diagonals by (chunk, output ciphertext, diagonal), and their exponent k."""
MAX_EXPONENT = 480
"""The largest k of ``M 2^k``: unscale_bits = bound bits - k - decoded bits stays above -512."""


class PackedEvaluator:
    """Evaluator's side: packed products with its plaintext matrices, then mask or reveal."""

    def __init__(self, public: CKKSPublicContext, *, mask_bits: int = MASK_BITS) -> None:
        if not isinstance(public, CKKSPublicContext) or not public.tenseal_context.has_galois_keys():
            raise InputError("the packed engine needs a CKKS public context with Galois keys")
        galois = public.tenseal_context.galois_keys().data
        if not all(galois.has_key(e) for e in left_rotation_elements(public.config.poly_modulus_degree)):
            raise ProtocolError("the key owner's public context lacks Galois keys for the left power-of-two"
                                " rotations the packed engine makes")
        if isinstance(mask_bits, bool) or not isinstance(mask_bits, int) or not 1 <= mask_bits <= 40:
            raise InputError(f"mask_bits must be an int in 1..40, got {mask_bits!r}")
        self.seal = SealHandles(public)
        self.mask_bits = mask_bits
        self.zeros: list[Any] = []  # spare fresh Enc(0), made ahead of time; each used once

    def load(self, fields: Mapping[str, Any], plan: Plan) -> list[Any]:
        """The key owner's packed inputs; DecodeError unless each is at the input scale (any other
        would reach SEAL's products as a raw "scale mismatch")."""
        cts = ciphertexts_from_fields(self.seal.public, fields, plan.n_inputs)
        if any(ct.scale != 2.0 ** self.seal.public.config.scale_bits for ct in cts):
            raise DecodeError(f"the key owner's inputs are not at scale 2^{self.seal.public.config.scale_bits}")
        return cts

    def rerandomize(self, cts: Sequence[Any]) -> list[Any]:
        """``cts`` (in place) plus a fresh Enc(0) each, for a product whose result the key owner reads.

        The key switch of a rotation adds noise that is a function of the ciphertext's
        ``c1`` and of keys the key owner made; on its own ciphertexts it could compute that
        noise, which the evaluator's plaintext diagonals then multiply: a part of the
        result's CKKS error linear in the evaluator's matrix with coefficients it knows.
        With a ``c1`` it does not know, it cannot.
        """
        for ct in cts:
            zero = self._spare_zero()
            zero.scale = ct.scale
            self.seal.evaluator.add_inplace(ct, zero)
        return list(cts)

    def _spare_zero(self) -> Any:
        """A fresh Enc(0): one made ahead of time when there is one (each used once), else a new one."""
        return self.zeros.pop() if self.zeros else self.seal.zero()

    def plaintexts(self, m: np.ndarray, plan: Plan, groups: range | None = None) -> Prepared:
        """The encoded diagonals of ``M 2^k`` for giant ``groups`` (default all) and the exponent k.

        Encoding is the costliest step after the rotations and needs only M, so a process
        with idle time can do it before the encrypted input arrives (:meth:`product`'s
        ``prepared``).
        """
        groups = range(plan.giant) if groups is None else groups
        peak = float(np.max(np.abs(m), initial=0.0))
        # at most MAX_EXPONENT: the key owner refuses |unscale_bits| > 512, and entries under
        # 2^-(MAX_EXPONENT+36) of 1 (dz of a saturated model, say) round to 0 as below anyway
        exponent = min(-math.frexp(peak)[1], MAX_EXPONENT) if peak > 0 else 0
        diags = diagonals(np.ldexp(m, exponent), plan)
        scale = 2.0 ** PLAIN_SCALE_BITS
        used = np.any(diags != 0, axis=-1)  # all-zero diagonals (padding) are skipped
        plains = {key: self.seal.encode(diags[key], scale) for key in map(tuple, np.argwhere(used).tolist())
                  if key[2] // plan.baby in groups}
        # so are those whose values all round to 0 at this scale (under 2^-36 of max |M|, e.g. the
        # gradient of a saturated sigmoid): SEAL refuses a product with a zero plaintext
        return {key: plain for key, plain in plains.items() if not plain.is_zero()}, exponent

    def product(self, cts: Sequence[Any], m: np.ndarray, plan: Plan, groups: range | None = None,
                prepared: Prepared | None = None,
                baby: Sequence[Sequence[Any]] | None = None) -> tuple[list[Any], int]:
        """Output ciphertexts of ``X @ (M 2^k)`` (None where all zero) and the exponent k.

        ``groups``: only these giant groups (a range; default all), so that two processes
        can share one product: the part of groups ``g0..`` is the product's sum over them
        rotated by ``-g0`` giant steps, and :meth:`join` adds the parts up. ``prepared``:
        :meth:`plaintexts` of the same M, plan layout and groups, made ahead of time.
        ``baby``: :meth:`baby_steps` of ``cts``, computed elsewhere (the other process).
        """
        groups = range(plan.giant) if groups is None else groups
        plains, exponent = self.plaintexts(m, plan, groups) if prepared is None else prepared
        baby = self.baby_steps(cts, plan) if baby is None else baby
        if len(baby) != len(cts) or any(len(steps) != plan.baby for steps in baby):
            raise InputError(f"expected {plan.baby} baby steps for each of {len(cts)} input ciphertexts")
        outs = []
        for block in range(plan.row_blocks):
            steps = baby[block * plan.chunks:(block + 1) * plan.chunks]
            outs += [self._giant(steps, plains, o, plan, groups) for o in range(plan.out_cts)]
        return outs, exponent

    def baby_steps(self, cts: Sequence[Any], plan: Plan) -> list[list[Any]]:
        """Each input ciphertext rotated by 0..s-1 contraction positions (s - 1 key switches each)."""
        return [self._baby(ct, plan) for ct in cts]

    def join(self, outs: list[Any], parts: list[Any], plan: Plan, start: int) -> list[Any]:
        """``outs`` (groups ``0..start-1``) plus ``parts`` (groups ``start..``, see :meth:`product`)."""
        joined = []
        for out, part in zip(outs, parts):
            if part is not None:
                part = self._rotate(part, start * plan.baby * plan.lanes)
                if out is not None:
                    self.seal.evaluator.add_inplace(part, out)
            joined.append(out if part is None else part)
        return joined

    def _rotate(self, ct: Any, steps: int) -> Any:
        """``ct`` rotated left by ``steps`` slots, one key switch per power of two in it (the
        public context holds left power-of-two keys only, so SEAL's own decomposition, which
        may rotate right, is not used)."""
        if steps < 0:
            raise InputError(f"the packed evaluator rotates left only, asked for {steps} steps")
        out, bit = ct, 1
        while bit <= steps:
            if steps & bit:
                rotated = sealapi.Ciphertext()
                self.seal.evaluator.rotate_vector(out, bit, self.seal.galois, rotated)
                out = rotated
            bit <<= 1
        return out

    def _baby(self, ct: Any, plan: Plan) -> list[Any]:
        steps = [ct]
        for _ in range(1, plan.baby):
            steps.append(self._rotate(steps[-1], plan.lanes))
        return steps

    def _giant(self, baby: Sequence[Sequence[Any]], plains: dict, out: int, plan: Plan,
               groups: range) -> Any:
        """Horner over giant groups: acc = inner_g + rot_s(acc), from the last group down."""
        acc = None
        for g in reversed(groups):
            inner = None
            for q in range(plan.chunks):
                for t in range(plan.baby):
                    plain = plains.get((q, out, g * plan.baby + t))
                    if plain is not None:
                        inner = self._accumulate(inner, baby[q][t], plain)
            if acc is not None:
                rotated = self._rotate(acc, plan.baby * plan.lanes)
                if inner is not None:
                    self.seal.evaluator.add_inplace(rotated, inner)
                inner = rotated
            acc = inner
        return acc

    def _accumulate(self, acc: Any, ct: Any, plain: Any) -> Any:
        prod = sealapi.Ciphertext()
        self.seal.evaluator.multiply_plain(ct, plain, prod)
        if acc is None:
            return prod
        self.seal.evaluator.add_inplace(acc, prod)
        return acc

    def _fold(self, ct: Any, plan: Plan) -> Any:
        """Make every fold copy the full sum: log2(fold) rotate-and-add steps."""
        step = plan.diagonals * plan.lanes
        while step < plan.slots:
            self.seal.evaluator.add_inplace(ct, self._rotate(ct, step))
            step *= 2
        return ct

    def masked(self, outs: list[Any], plan: Plan, exponent: int,
               x_bound: float) -> tuple[dict[str, Any], np.ndarray]:
        """Fields of Enc(Y + r) for the key owner, and r (rows x outputs) to remove later.

        r is uniform in the slots and, with its flood, in every bit of every coefficient
        below its size, so it hides the product's error as well as its value.
        """
        value_bound = x_bound * plan.contraction  # |M 2^k| <= 1
        radius = math.ldexp(value_bound, self.mask_bits)
        shape = (plan.n_outputs, plan.slots)
        noise = os_uniform(radius, shape) + 1j * os_uniform(radius, shape)
        floods, flooded = self._floods(plan.n_outputs, value_bound + radius)
        peak = float(np.max(np.abs(flooded.view(np.float64))))  # ~2^-40 of the bound
        fields = self._finish(outs, noise, value_bound + radius + peak, exponent, floods=floods)
        return fields, np.ldexp(unpack_output(noise + flooded, plan), -exponent)

    def revealed(self, outs: list[Any], plan: Plan, exponent: int, x_bound: float,
                 plain: np.ndarray) -> dict[str, Any]:
        """Fields of Enc(Y + plain) for the key owner to read.

        Fold copies are summed here (rotations), not by the key owner: partial sums
        over subsets of the contraction would tell it more than Y. The lanes it does
        not read get a uniform guard: there Y is 0, so they would hold the product's
        CKKS error alone, linear in M; with inputs not re-randomised (:meth:`rerandomize`)
        the key owner can compute its coefficients (its own input's rotation noise) and
        solve for M.
        """
        scaled = np.ldexp(np.asarray(plain, dtype=np.float64), exponent)
        bound = x_bound * plan.contraction + float(np.max(np.abs(scaled), initial=0.0))
        outs = [None if ct is None else self._fold(ct, plan) for ct in outs]
        lanes = pack_every_copy(scaled, plan)  # every copy holds the sum; the key owner adds them up
        read, shape = read_lanes(plan), lanes.shape
        guard = os_uniform(bound, shape) * (read.real == 0) + 1j * os_uniform(bound, shape) * (read.imag == 0)
        floods, flooded = self._floods(plan.n_outputs, 2 * bound)  # taken off the clear term: Y + plain decrypts
        return self._finish(outs, lanes + guard - flooded, 2 * bound, exponent, copies=plan.fold, floods=floods)

    def _floods(self, count: int, bound: float) -> tuple[list[list[Any]], np.ndarray]:
        """``count`` floods for terms below ``bound`` (slot units at scale 2^85) and their slot values.

        A term's coefficients are below ``bound 2^85``, rounded to steps of at most
        ``2^(e - 52)`` with ``2^e`` that size; the flood is uniform modulo twice that step.
        """
        top = bound_exponent(bound) + self.seal.input_bits + PLAIN_SCALE_BITS - 51
        sizes = [FLOOD_BITS]
        while sizes[-1] - 3 < top:
            sizes.append(min(sizes[-1] + FLOOD_STEP, top + 3))
        scale = 2.0 ** (self.seal.input_bits + PLAIN_SCALE_BITS)
        floods, values = [], np.zeros((count, self.seal.slots), dtype=np.complex128)
        for lanes in values:
            parts = []
            for bits in sizes:  # coefficient std = radius sqrt(2 / (3 N)) for uniform complex slots
                radius = math.ldexp(math.sqrt(3 * self.seal.slots), bits)
                part = os_uniform(radius, lanes.shape) + 1j * os_uniform(radius, lanes.shape)
                parts.append(self.seal.encode(part, 1.0))
                parts[-1].scale = scale  # exact integers, read at the outputs' scale
                lanes += part / scale
            floods.append(parts)
        return floods, values

    def _finish(self, outs: list[Any], lanes: np.ndarray, bound: float, exponent: int,
                copies: int = 1, floods: Sequence[Sequence[Any]] = ()) -> dict[str, Any]:
        """Add Enc(lanes) and the ``floods`` to each output (from a spare zero when there is one)
        and set the decoding scale.

        Decoded lanes are ``value / 2^(k + t) / copies`` (below the value limit); the
        key owner multiplies by ``2^t`` and adds the ``copies`` fold copies.
        """
        if bound >= 2.0 ** self.seal.room_bits:
            raise EncodingOverflowError(
                f"packed CKKS values may reach {bound:.3g}, over the 2^{self.seal.room_bits} room "
                "of the modulus; lower mask_bits or the public value bounds")
        scale = 2.0 ** (self.seal.input_bits + PLAIN_SCALE_BITS)
        unscale = bound_exponent(bound) - exponent - self.seal.decoded_bits
        cts = []
        for i, (out, add) in enumerate(zip(outs, lanes)):
            fresh = self.seal.encrypt(add, scale, self._spare_zero())
            for part in floods[i] if floods else ():
                self.seal.evaluator.add_plain_inplace(fresh, part)
            if out is not None:
                self.seal.evaluator.add_inplace(fresh, out)
            fresh.scale = math.ldexp(scale * copies, exponent + unscale)
            cts.append(fresh)
        fields = ciphertexts_fields(self.seal.public, cts, bound_exp=self.seal.decoded_bits)
        fields["unscale_bits"] = int(unscale)
        return fields


__all__ = ["FLOOD_BITS", "FLOOD_STEP", "PackedEvaluator", "Prepared"]
