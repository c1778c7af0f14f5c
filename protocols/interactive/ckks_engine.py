"""Packed CKKS products for the interactive layer: slot-packed, rotation-based, fast.

Parameters (:data:`PACKED_CKKS_OPTIONS`): N = 8192, coeff_mod_bit_sizes (60, 60, 60)
(180 bits, within the HE standard's 218 for 128-bit security), Galois keys for the
power-of-two rotations. The key owner (a :class:`PackedCKKSKey`, which also decodes
the imaginary parts of slots) encrypts X in the layout of
:mod:`protocols.interactive.packing` at scale 2^50, with its secret key (2.5x faster
than public-key encryption, equally IND-CPA), complex slots, top level. The
evaluator multiplies by plaintext diagonals of M, normalised to ``|M 2^k| <= 1`` and
encoded at 2^35, with baby-step/giant-step rotations and never rescales: results
stay at the top level at scale 2^85, leaving 2^33 of room in the 120-bit modulus.
Rotation key-switch noise (~2^18 absolute) is negligible at these scales, and the
plaintext encoding error is ~sqrt(N) 2^-36 relative.

Leaving the evaluator, every output ciphertext gets a fresh encryption added, so its
``c1`` is re-randomised and the key owner cannot solve for the evaluator's
plaintexts from it: either a uniform mask of ``mask_bits`` bits above the public
bound of the result (values the key owner must not see) or the evaluator's own plain
term (values it may see; fold copies are summed homomorphically first). The scale
attribute is raised by ``2^(k + t)`` so that decoded lanes stay below the context's
value limit; ``t`` travels as ``unscale_bits``. This reveals ``k``, the power of two
of ``max |M|``, like the power-of-two bounds CKKSArray already publishes.

Precision is set by the masks: the key owner decodes in double precision, so a
mask of ``2^b`` times the result bound costs about ``b - 48`` bits of absolute
precision relative to that bound (2^-32 of it for the default 16 bits).

Cost (2-core development machine, one thread): at the breast sizes of HE-VFL (batch
128, n = 100, m = 50) each product takes 2 input and 2 output ciphertexts, 28
rotations (~1.05 ms each), 64 plaintext encodings (~0.28 ms, SEAL's FFT and NTTs),
128 plaintext multiplications (~0.08 ms) and 2 fresh encryptions (~2.4 ms): about
80 ms, three products per training step. ``product(groups=...)`` and :meth:`join`
let two processes share one product (:mod:`protocols.interactive.ckks_helper`);
``PackedEvaluator.zeros`` holds encryptions of zero made ahead of time.

Caveats (as in :mod:`protocols.channels.masking`): CKKS masks hide statistically
with ``mask_bits`` bits relative to a worst-case bound, and the decrypted noise is
not flooded (no formal circuit privacy against the key owner).
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence, cast

import numpy as np
from tenseal import sealapi

from protocols.errors import CryptoError, EncodingOverflowError, InputError
from protocols.he import CKKSPublicContext, CKKSSecretContext, make_config
from protocols.interactive.packing import (Plan, diagonals, pack_input, pack_output,
                                           unpack_output)
from protocols.interactive.sealwire import ciphertexts_fields, ciphertexts_from_fields

PACKED_CKKS_OPTIONS: Mapping[str, Any] = {"poly_modulus_degree": 8192,
                                          "coeff_mod_bit_sizes": (60, 60, 60),
                                          "scale_bits": 50, "galois_keys": True}
PLAIN_SCALE_BITS = 35
MASK_BITS = 16


def os_uniform(radius: float, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform floats in [-radius, radius) with 53 bits each from os.urandom (never seeded)."""
    count = math.prod(shape)
    raw = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    return ((raw.astype(np.float64) / 2.0 ** 52 - 1.0) * radius).reshape(shape)


def bound_exponent(value: float) -> int:
    """The smallest e >= 0 with |value| <= 2^e."""
    return max(0, math.ceil(math.log2(value))) if value > 1.0 else 0


class PackedCKKSKey(CKKSSecretContext):
    """A CKKS key owner that also decodes complex slots of raw packed ciphertexts.

    ``CKKSSecretContext.decrypt`` returns real parts only; the packed layout stores
    a second row (or output block) in the imaginary parts.
    """

    @classmethod
    def generate_packed(cls, workers: int | None = None) -> "PackedCKKSKey":
        """Fresh keys with :data:`PACKED_CKKS_OPTIONS` (SEAL draws them from the OS)."""
        return cast(PackedCKKSKey, cls.generate(make_config("ckks", **PACKED_CKKS_OPTIONS,
                                                                 workers=workers)))

    def _sealapi(self) -> tuple[Any, Any, Any, Any]:
        """SEAL context, encoder, secret-key encryptor and decryptor (built once)."""
        handles = getattr(self, "_packed_handles", None)
        if handles is None:
            seal = self._context.seal_context().data
            secret = self._context.secret_key().data
            handles = (seal, sealapi.CKKSEncoder(seal), sealapi.Encryptor(seal, secret),
                       sealapi.Decryptor(seal, secret))
            self._packed_handles = handles
        return handles

    def encrypt_slots(self, lanes: np.ndarray, scale: float) -> list[Any]:
        """Fresh secret-key encryptions of complex slot vectors (2.5x faster than public-key)."""
        seal, encoder, encryptor, _ = self._sealapi()
        out = []
        for vector in np.asarray(lanes, dtype=np.complex128):
            plain, ct = sealapi.Plaintext(), sealapi.Ciphertext()
            encoder.encode(vector.tolist(), seal.first_parms_id(), scale, plain)
            encryptor.encrypt_symmetric(plain, ct)
            out.append(ct)
        return out

    def decrypt_slots(self, ciphertexts: Sequence[Any]) -> np.ndarray:
        """Complex slot values (count, slots); CryptoError beyond the context's value limit."""
        _, encoder, _, decryptor = self._sealapi()
        out = []
        for ct in ciphertexts:
            plain = sealapi.Plaintext()
            decryptor.decrypt(ct, plain)
            out.append(encoder.decode_complex(plain))
        values = np.array(out, dtype=np.complex128)
        limit = 2.0 * self.config.value_limit
        if not (np.all(np.abs(values.real) <= limit) and np.all(np.abs(values.imag) <= limit)):
            raise CryptoError("decryption failed")
        return values


class _Seal:
    """SEAL handles of one CKKS public context: encoder, evaluator, public-key encryptor."""

    def __init__(self, public: CKKSPublicContext) -> None:
        ctx = public.tenseal_context
        self.public = public
        self.context = ctx.seal_context().data
        self.encoder = sealapi.CKKSEncoder(self.context)
        self.evaluator = sealapi.Evaluator(self.context)
        self.encryptor = sealapi.Encryptor(self.context, ctx.public_key().data)
        self.galois = ctx.galois_keys().data if ctx.has_galois_keys() else None
        self.top = self.context.first_parms_id()
        self.slots = self.encoder.slot_count()
        self.input_bits = public.config.scale_bits
        modulus_bits = sum(public.config.coeff_mod_bit_sizes[:-1])
        self.room_bits = modulus_bits - 2 - self.input_bits - PLAIN_SCALE_BITS
        # decoded lanes stay within the context's public value limit
        self.decoded_bits = math.frexp(public.config.value_limit)[1] - 2

    def encode(self, values: np.ndarray, scale: float) -> Any:
        plain = sealapi.Plaintext()
        self.encoder.encode(np.asarray(values, dtype=np.complex128).tolist(), self.top, scale, plain)
        return plain

    def zero(self) -> Any:
        """A fresh public-key encryption of zero at the top level."""
        out = sealapi.Ciphertext()
        self.encryptor.encrypt_zero(self.top, out)
        return out

    def encrypt(self, values: np.ndarray, scale: float, zero: Any = None) -> Any:
        """Enc(values): SEAL's public-key encryption, or ``zero`` (an unused :meth:`zero`) plus
        the plaintext, which is what SEAL's encryption computes."""
        if zero is None:
            out = sealapi.Ciphertext()
            self.encryptor.encrypt(self.encode(values, scale), out)
            return out
        zero.scale = scale
        self.evaluator.add_plain_inplace(zero, self.encode(values, scale))
        return zero


class PackedKeyOwner:
    """Key owner's side: encrypt packed inputs, decrypt packed outputs."""

    def __init__(self, secret: PackedCKKSKey) -> None:
        if not isinstance(secret, PackedCKKSKey):
            raise InputError("the packed CKKS engine needs a PackedCKKSKey "
                             "(PackedCKKSKey.generate_packed())")
        self.secret = secret
        self.seal = _Seal(secret.public_context())

    def encrypt(self, x: np.ndarray, plan: Plan, bound: float) -> dict[str, Any]:
        """Fields of Enc(X) in ``plan``'s input layout; ``|X| <= bound`` (public) is checked."""
        peak = float(np.max(np.abs(x), initial=0.0))
        if not peak <= bound:
            raise EncodingOverflowError(f"|value| {peak:g} exceeds the public bound {bound:g}"
                                        " (raise InteractiveConfig.activation_bound)")
        cts = self.secret.encrypt_slots(pack_input(x, plan), 2.0 ** self.seal.input_bits)
        return ciphertexts_fields(self.seal.public, cts, bound_exp=bound_exponent(bound))

    def decrypt(self, fields: Mapping[str, Any], plan: Plan) -> np.ndarray:
        """Y (rows x outputs) from an evaluator's output fields (masked or not)."""
        unscale = fields.get("unscale_bits")
        if isinstance(unscale, bool) or not isinstance(unscale, int) or abs(unscale) > 512:
            raise InputError("packed output lacks a valid unscale_bits")
        body = {k: v for k, v in fields.items() if k != "unscale_bits"}
        cts = ciphertexts_from_fields(self.seal.public, body, plan.n_outputs)
        return unpack_output(self.secret.decrypt_slots(cts) * 2.0 ** unscale, plan)


class PackedEvaluator:
    """Evaluator's side: packed products with its plaintext matrices, then mask or reveal."""

    def __init__(self, public: CKKSPublicContext, *, mask_bits: int = MASK_BITS) -> None:
        if not isinstance(public, CKKSPublicContext) or not public.tenseal_context.has_galois_keys():
            raise InputError("the packed engine needs a CKKS public context with Galois keys")
        if isinstance(mask_bits, bool) or not isinstance(mask_bits, int) or not 1 <= mask_bits <= 40:
            raise InputError(f"mask_bits must be an int in 1..40, got {mask_bits!r}")
        self.seal = _Seal(public)
        self.mask_bits = mask_bits
        self.zeros: list[Any] = []  # spare fresh Enc(0), made ahead of time; each used once

    def load(self, fields: Mapping[str, Any], plan: Plan) -> list[Any]:
        return ciphertexts_from_fields(self.seal.public, fields, plan.n_inputs)

    def product(self, cts: Sequence[Any], m: np.ndarray, plan: Plan,
                groups: range | None = None) -> tuple[list[Any], int]:
        """Output ciphertexts of ``X @ (M 2^k)`` (None where all zero) and the exponent k.

        ``groups``: only these giant groups (a range; default all), so that two processes
        can share one product: the part of groups ``g0..`` is the product's sum over them
        rotated by ``-g0`` giant steps, and :meth:`join` adds the parts up.
        """
        groups = range(plan.giant) if groups is None else groups
        peak = float(np.max(np.abs(m), initial=0.0))
        exponent = -math.frexp(peak)[1] if peak > 0 else 0
        diags = diagonals(np.ldexp(m, exponent), plan)
        scale = 2.0 ** PLAIN_SCALE_BITS
        plains = {key: self.seal.encode(diags[key], scale) for key in np.ndindex(diags.shape[:3])
                  if key[2] // plan.baby in groups and np.any(diags[key])}
        outs = []
        for block in range(plan.row_blocks):
            baby = [self._baby(cts[block * plan.chunks + q], plan) for q in range(plan.chunks)]
            outs += [self._giant(baby, plains, o, plan, groups) for o in range(plan.out_cts)]
        return outs, exponent

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
        out = sealapi.Ciphertext()
        self.seal.evaluator.rotate_vector(ct, steps, self.seal.galois, out)
        return out

    def _baby(self, ct: Any, plan: Plan) -> list[Any]:
        steps = [ct]
        for _ in range(1, plan.baby):
            steps.append(self._rotate(steps[-1], plan.lanes))
        return steps

    def _giant(self, baby: list[list[Any]], plains: dict, out: int, plan: Plan, groups: range) -> Any:
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
        """Fields of Enc(Y + r) for the key owner, and r (rows x outputs) to remove later."""
        value_bound = x_bound * plan.contraction  # |M 2^k| <= 1
        radius = math.ldexp(value_bound, self.mask_bits)
        shape = (plan.n_outputs, plan.slots)
        noise = os_uniform(radius, shape) + 1j * os_uniform(radius, shape)
        fields = self._finish(outs, noise, value_bound + radius, exponent)
        return fields, np.ldexp(unpack_output(noise, plan), -exponent)

    def revealed(self, outs: list[Any], plan: Plan, exponent: int, x_bound: float,
                 plain: np.ndarray) -> dict[str, Any]:
        """Fields of Enc(Y + plain) for the key owner to read.

        Fold copies are summed here (rotations), not by the key owner: partial sums
        over subsets of the contraction would tell it more than Y.
        """
        scaled = np.ldexp(np.asarray(plain, dtype=np.float64), exponent)
        bound = x_bound * plan.contraction + float(np.max(np.abs(scaled), initial=0.0))
        outs = [None if ct is None else self._fold(ct, plan) for ct in outs]
        lanes = pack_output(scaled, plan).reshape(plan.n_outputs, plan.fold, -1)
        lanes[:] = lanes[:, :1]  # every copy holds the sum; the key owner adds them up
        return self._finish(outs, lanes.reshape(plan.n_outputs, plan.slots), bound, exponent,
                            copies=plan.fold)

    def _finish(self, outs: list[Any], lanes: np.ndarray, bound: float, exponent: int,
                copies: int = 1) -> dict[str, Any]:
        """Add Enc(lanes) to each output (from a spare zero when there is one) and set the decoding scale.

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
        for out, add in zip(outs, lanes):
            fresh = self.seal.encrypt(add, scale, self.zeros.pop() if self.zeros else None)
            if out is not None:
                self.seal.evaluator.add_inplace(fresh, out)
            fresh.scale = math.ldexp(scale * copies, exponent + unscale)
            cts.append(fresh)
        fields = ciphertexts_fields(self.seal.public, cts, bound_exp=self.seal.decoded_bits)
        fields["unscale_bits"] = int(unscale)
        return fields


__all__ = ["MASK_BITS", "PACKED_CKKS_OPTIONS", "PackedCKKSKey", "PackedEvaluator", "PackedKeyOwner",
           "bound_exponent", "os_uniform"]
