"""Additive masking of encrypted values sent to their key owner for decryption.

Party A holds ``Enc_B(x)`` under B's key. A draws a fresh mask ``r``, encrypts it
itself with B's public context, sends ``Enc_B(x + r)``; B decrypts and returns
``x + r``; A subtracts ``r``. B's view is ``x + r`` only::

    mask = AdditiveMask.draw(public, like=enc)       # party A
    send(mask.apply(enc).to_fields())                # -> B: decrypt_raw(...) -> back to A
    x = mask.remove(returned)                        # party A

Every lane of every ciphertext gets its own mask (padding and folded lanes too),
and the mask is a fresh encryption, so the masked ciphertext is also re-randomised.
A mask is single-use: reusing one would hand B the difference of two values.

Paillier (exact, statistical hiding 2^-sigma per lane, sigma = 40 by default):
lanes ``r`` are uniform integers in [-R, R] with ``R = 2^sigma * B`` in the
fixed-point domain, ``B`` = the array's public lane bound (or a tighter ``bound``
the caller knows). For two inputs below B the distributions of ``x + r`` differ by
at most ``2B / (2R + 1) < 2^-sigma``. Masked lanes need ``log2(B) + sigma + 1``
bits; if the slot is narrower, ``draw`` raises EncodingOverflowError (so nothing
wraps). B returns ``decrypt_raw(...)`` -- exact integers (a FixedPointArray) --
and A subtracts ``r`` in the integers before rounding to float. Integers come from
``secrets.randbelow`` (the OS CSPRNG).

CKKS (noise flooding, approximate): lanes are uniform floats in [-R, R] (53 bits
from ``os.urandom`` each). A CKKS lane must stay below ``value_limit`` (2^19 for
[60, 40, 40, 60] at scale 2^40), so ``sigma <= log2(value_limit / B) - 1``: about
18 bits for values below 1, 10 bits for values below 256 -- much weaker hiding
than Paillier's, and it is the price of CKKS's fixed modulus. The default sigma
is the largest that fits; a larger q0 or a smaller scale buys more. Two further
CKKS caveats, not addressed here: B's decryption carries CKKS noise that A then
learns (Li & Micciancio, EUROCRYPT 2021: decryptions shared with a non-key-owner
can leak the secret key unless the decryptor floods them with noise), and the
ciphertext noise after A's plaintext operations is not flooded (no circuit
privacy against B).
"""

from __future__ import annotations

import math
import os
import secrets
from typing import Any

import numpy as np

from protocols.errors import EncodingOverflowError, InputError
from protocols.he.base import EncryptedArray, PublicContext
from protocols.he.fixedpoint import FixedPointArray, scaled_bound

PAILLIER_SIGMA_BITS = 40


def _uniform_ints(radius: int, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform integers in [-radius, radius] from the OS CSPRNG."""
    out = np.empty(math.prod(shape), dtype=object)
    out[:] = [secrets.randbelow(2 * radius + 1) - radius for _ in range(out.size)]
    return out.reshape(shape)


def _uniform_floats(radius: float, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform floats in [-radius, radius) with 53 random bits each from os.urandom."""
    count = math.prod(shape)
    raw = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    return ((raw.astype(np.float64) / 2.0 ** 52 - 1.0) * radius).reshape(shape)


def _meta(array: EncryptedArray) -> tuple[Any, ...]:
    """What must match between the array a mask was drawn for and the one it masks."""
    return (array.scheme, array.context.key_id, array.shape, getattr(array, "packed", None),
            getattr(array, "scale_bits", None), getattr(array, "layout", None),
            getattr(array, "lane_count", None), array.bound)


class AdditiveMask:
    """A one-time additive mask for one encrypted array (see module doc)."""

    __slots__ = ("_like", "_lanes", "_encrypted", "_sigma_bits", "_used")

    def __init__(self, like: EncryptedArray, lanes: np.ndarray, encrypted: EncryptedArray,
                 sigma_bits: int) -> None:
        """Internal: use :meth:`draw`."""
        self._like, self._lanes, self._encrypted = like, lanes, encrypted
        self._sigma_bits, self._used = sigma_bits, False

    @classmethod
    def draw(cls, public_context: PublicContext, *, like: EncryptedArray, bound: float | None = None,
             sigma_bits: int | None = None) -> "AdditiveMask":
        """A fresh mask for arrays shaped and scaled like ``like``, encrypted under its key."""
        if not isinstance(like, EncryptedArray) or like.context.key_id != public_context.key_id:
            raise InputError("the mask must be drawn under the public context of the array it masks")
        if bound is not None and not 0 < float(bound) < math.inf:
            raise InputError(f"bound must be positive and finite, got {bound!r}")
        if sigma_bits is not None and (isinstance(sigma_bits, bool) or not isinstance(sigma_bits, int)
                                       or sigma_bits < 1):
            raise InputError(f"sigma_bits must be a positive int, got {sigma_bits!r}")
        if like.scheme == "paillier":
            return cls._draw_paillier(like, bound, PAILLIER_SIGMA_BITS if sigma_bits is None else sigma_bits)
        if like.scheme == "ckks":
            return cls._draw_ckks(like, bound, sigma_bits)
        raise InputError(f"no additive mask for scheme {like.scheme!r}")

    @classmethod
    def _draw_paillier(cls, like: Any, bound: float | None, sigma: int) -> "AdditiveMask":
        value_bound = 1 << like.bound_bits if bound is None else scaled_bound(bound, like.scale_bits)
        radius = value_bound << sigma
        need = max(like.bound_bits, radius.bit_length()) + 1
        if need > like.context.lane_bits - 1:
            raise EncodingOverflowError(
                f"masking with sigma={sigma} needs {need}-bit lanes but the {like.context.lane_bits}"
                f"-bit slot holds {like.context.lane_bits - 1}; raise slot_bits or lower "
                "precision_bits / max_abs")
        lanes = _uniform_ints(radius, like.lane_shape)
        return cls(like, lanes, like.encrypt_lanes(lanes, radius), sigma)

    @classmethod
    def _draw_ckks(cls, like: Any, bound: float | None, sigma: int | None) -> "AdditiveMask":
        value_bound = like.bound if bound is None else float(bound)
        room = like.context.config.value_limit - like.bound
        widest = math.floor(math.log2(room / value_bound)) if room > 0 else 0
        sigma = widest if sigma is None else sigma
        if sigma < 1 or sigma > widest:
            raise EncodingOverflowError(
                f"a CKKS mask for values below {value_bound:g} can hide at most {widest} bits "
                f"(value_limit {like.context.config.value_limit:g}); asked for {sigma}")
        radius = math.ldexp(value_bound, sigma)
        lanes = _uniform_floats(radius, like.lane_shape)
        return cls(like, lanes, like.encrypt_lanes(lanes, radius), sigma)

    @property
    def sigma_bits(self) -> int:
        """Statistical hiding parameter: per-lane distance at most 2^-sigma_bits."""
        return self._sigma_bits

    def apply(self, array: EncryptedArray) -> EncryptedArray:
        """``Enc(x + r)``: the array to send to the key owner. Once per mask."""
        if not isinstance(array, EncryptedArray) or _meta(array) != _meta(self._like):
            raise InputError("this mask was drawn for an array of another key, shape, layout, "
                             "scale or bound")
        if self._used:
            raise InputError("an additive mask must be used once; draw a fresh one")
        self._used = True
        return array + self._encrypted

    def remove(self, decrypted: Any) -> np.ndarray:
        """``x`` from the key owner's ``x + r`` (Paillier: its exact FixedPointArray)."""
        mask_values = self._like.lanes_to_values(self._lanes)
        if self._like.scheme == "paillier":
            if not isinstance(decrypted, FixedPointArray) or decrypted.shape != self._like.shape \
                    or decrypted.scale_bits != getattr(self._like, "scale_bits"):
                raise InputError("Paillier unmasking needs the key owner's exact FixedPointArray "
                                 f"(decrypt_raw) of shape {self._like.shape}")
            values = np.asarray(decrypted.values - mask_values, dtype=object).reshape(decrypted.shape)
            return FixedPointArray(values, decrypted.scale_bits).to_float()
        plain = np.asarray(decrypted, dtype=np.float64)
        if plain.shape != self._like.shape:
            raise InputError(f"decrypted shape {plain.shape} does not match the masked shape "
                             f"{self._like.shape}")
        return plain - mask_values

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the values this mask hides."""
        return tuple(self._like.shape)

    def __repr__(self) -> str:
        return f"AdditiveMask({self._like.scheme}, shape={self._like.shape}, sigma_bits={self._sigma_bits})"
