"""Packed CKKS products for the interactive layer: slot-packed, rotation-based, fast.

Parameters (:data:`PACKED_CKKS_OPTIONS`): N = 8192, coeff_mod_bit_sizes (60, 60, 60)
(180 bits, within the HE standard's 218 for 128-bit security), Galois keys for the
left power-of-two rotations (every rotation here is one or a sum of them). The key
owner (a :class:`PackedCKKSKey`, which also decodes the imaginary parts of slots)
encrypts X in the layout of :mod:`protocols.interactive.packing` at scale 2^50, with its secret key (2.5x faster
than public-key encryption, equally IND-CPA), complex slots, top level, and sends
them seeded: the uniform ``c1`` of each travels as the seed it was expanded from,
half the bytes (SEAL's load expands it again). The seed is public, as ``c1`` is, and
fresh from the OS per ciphertext, as SEAL draws every seed. The evaluator multiplies
by plaintext diagonals of M, normalised to ``|M 2^k| <= 1`` and encoded at 2^35,
with baby-step/giant-step rotations and never rescales: results stay at the top
level at scale 2^85, leaving 2^33 of room in the 120-bit modulus. Rotation
key-switch noise (~2^18 absolute) is negligible at these scales, and the plaintext
encoding error is ~sqrt(N) 2^-36 relative.

Leaving the evaluator, every output ciphertext gets a fresh encryption added, so its
``c1`` is re-randomised and the key owner cannot solve for the evaluator's
plaintexts from it: either a uniform mask of ``mask_bits`` bits above the public
bound of the result (values the key owner must not see) or the evaluator's own plain
term (values it may see; fold copies are summed homomorphically first). Both come
with a flood (:mod:`protocols.interactive.ckks_evaluator`): integer polynomials that
make the low bits of every decrypted coefficient uniform, which a term encoded from
doubles would leave to the exact product. The scale
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
80 ms, three products per training step; the floods add one or two encodings per
output ciphertext (a breast run's time moved within its noise). The evaluator's side is
:mod:`protocols.interactive.ckks_evaluator`: ``PackedEvaluator.product(groups=...)``
and ``join`` let two processes share one product
(:mod:`protocols.interactive.ckks_helper`), ``plaintexts`` encodes a matrix's
diagonals ahead of its input, and ``zeros`` holds encryptions of zero made ahead of time.

Caveats (as in :mod:`protocols.channels.masking`): CKKS masks hide statistically
with ``mask_bits`` bits relative to a worst-case bound, in the slots and, flooded, in
every coefficient, so a masked product's CKKS error is hidden with its value. A
revealed sum (the input gradient, which the key owner reads) is guarded three ways:
it is flooded below its own rounding step; the lanes the key owner does not read get
a uniform guard (there Y is 0, and the error alone, linear in the evaluator's matrix
with coefficients the key owner could compute from its own ciphertexts, gave dz away
by least squares, to 2e-6); and its inputs are re-randomised before their rotations,
so the key owner cannot compute the rotation noise that the matrix multiplies. What
remains in the lanes it reads, beside dL/da, is an error of about 1e-8 at breast
sizes, dominated by the rounding of the evaluator's encoded diagonals (a
pseudo-random function of the matrix); a least-squares attack on it recovers nothing
(``tests/protocols/interactive/test_ckks_flood.py``). That is a measurement, not a
proof: this product has no formal circuit privacy against the key owner. Masks are
sized from the bound the key owner announces for its inputs, which the evaluator cannot
check under encryption: a key owner that encrypts values far above it (outside the
semi-honest model) shrinks the masks relative to the products and can read the
evaluator's matrix (dL/dz from the weight gradient, W~ from the forward product).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence, cast

import numpy as np
from tenseal import sealapi

from protocols.errors import CryptoError, DecodeError, EncodingOverflowError, InputError
from protocols.he import CKKSPublicContext, CKKSSecretContext, make_config
from protocols.interactive.packing import Plan, pack_input, unpack_output
from protocols.interactive.sealwire import ciphertexts_fields, ciphertexts_from_fields

PACKED_CKKS_OPTIONS: Mapping[str, Any] = {"poly_modulus_degree": 8192,
                                          "coeff_mod_bit_sizes": (60, 60, 60),
                                          "scale_bits": 50, "galois_keys": True}
PLAIN_SCALE_BITS = 35
MASK_BITS = 16


def room_bits(coeff_mod_bit_sizes: Sequence[int], scale_bits: int) -> int:
    """log2 of the room for packed output values: the data primes less input and plaintext scales, 2 spare."""
    return sum(coeff_mod_bit_sizes[:-1]) - 2 - scale_bits - PLAIN_SCALE_BITS


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

    def encrypt_slots(self, lanes: np.ndarray, scale: float, *, seeded: bool = False) -> list[Any]:
        """Fresh secret-key encryptions of complex slot vectors (2.5x faster than public-key).

        ``seeded``: SEAL ``Serializable`` ciphertexts, to send: ``c1`` is uniform, expanded from
        a seed that SEAL draws from the OS, and travels as that seed, so each is half the bytes
        of a full ciphertext (the receiver's load expands it). Otherwise SEAL ciphertexts, to
        compute on.
        """
        seal, encoder, encryptor, _ = self._sealapi()
        out = []
        for vector in np.asarray(lanes, dtype=np.complex128):
            plain = sealapi.Plaintext()
            encoder.encode(vector.tolist(), seal.first_parms_id(), scale, plain)
            if seeded:
                out.append(encryptor.encrypt_symmetric(plain))
            else:
                out.append(sealapi.Ciphertext())
                encryptor.encrypt_symmetric(plain, out[-1])
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


class SealHandles:
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
        self.room_bits = room_bits(public.config.coeff_mod_bit_sizes, self.input_bits)
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
        self.seal = SealHandles(secret.public_context())

    def encrypt(self, x: np.ndarray, plan: Plan, bound: float) -> dict[str, Any]:
        """Fields of Enc(X) in ``plan``'s input layout; ``|X| <= bound`` (public) is checked."""
        peak = float(np.max(np.abs(x), initial=0.0))
        if not peak <= bound:
            raise EncodingOverflowError(f"|value| {peak:g} exceeds the public bound {bound:g}"
                                        " (raise InteractiveConfig.activation_bound)")
        cts = self.secret.encrypt_slots(pack_input(x, plan), 2.0 ** self.seal.input_bits, seeded=True)
        return ciphertexts_fields(self.seal.public, cts, bound_exp=bound_exponent(bound))

    def decrypt(self, fields: Mapping[str, Any], plan: Plan) -> np.ndarray:
        """Y (rows x outputs) from an evaluator's output fields (masked or not)."""
        unscale = fields.get("unscale_bits")
        if isinstance(unscale, bool) or not isinstance(unscale, int) or abs(unscale) > 512:
            raise DecodeError("packed output lacks a valid unscale_bits")
        body = {k: v for k, v in fields.items() if k != "unscale_bits"}
        cts = ciphertexts_from_fields(self.seal.public, body, plan.n_outputs)
        return unpack_output(self.secret.decrypt_slots(cts) * 2.0 ** unscale, plan)


__all__ = ["MASK_BITS", "PACKED_CKKS_OPTIONS", "PLAIN_SCALE_BITS", "PackedCKKSKey", "PackedKeyOwner",
           "bound_exponent", "room_bits"]
