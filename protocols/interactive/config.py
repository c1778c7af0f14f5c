"""The settings of the secure interactive layer (:class:`InteractiveConfig`), checked when made.

Kept apart from :mod:`protocols.interactive.layer` (the two parties' roles), which
re-exports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from protocols.checks import finite_number
from protocols.errors import InputError
from protocols.he import BACKENDS, make_config
from protocols.interactive.ckks_engine import MASK_BITS, PACKED_CKKS_OPTIONS, PackedCKKSKey, bound_exponent, room_bits

SCHEMES = ("paillier", "ckks")


def _number(name: str, value: Any, *, low: float, strict: bool = True) -> None:
    if not finite_number(value) \
            or (value <= low if strict else value < low):
        raise InputError(f"InteractiveConfig.{name} must be a finite number "
                         f"{'>' if strict else '>='} {low}, got {value!r}")


@dataclass(frozen=True)
class InteractiveConfig:
    """Settings of the secure interactive layer; both parties must use the same.

    ``he``: "paillier" (exact fixed point) or "ckks" (``packed=True``: the fast
    slot-packed engine; False: the generic EncryptedArray engine). ``lr``: SGD rate
    of the interactive weights. ``noise_scale``: eps_w ~ U(-noise_scale, noise_scale)
    per step; 0 switches the weight-gradient mask off. FATE draws U(-2^10, 2^10) with
    Paillier; the default 1.0 keeps W~ small, which packed CKKS's precision wants (the
    absolute error of z grows with max |W~|: about 2e-4 at FATE's scale, 4e-7 at 1.0) and
    which keeps Paillier lanes within their slots. eps_acc, a random walk, goes to the
    evaluator scaled into range (``scale_exp``), so no noise scale or run length
    overflows packed CKKS. :meth:`check_batch` bounds the rows of a batch.
    ``activation_bound``: public bound on |a| (encryption range). ``mask_bits``:
    statistical hiding of CKKS masks (the generic engine's small value limit leaves
    room for about 8 bits at most; it refuses a product that cannot have them).
    ``helper``: with packed CKKS the evaluator computes each input gradient in a helper
    process of its own, beside the weight gradient (a second core; SEAL keeps the GIL,
    so threads would not overlap). Paillier: ``key_bits``, ``precision_bits``,
    ``insecure_small_keys_for_tests`` (tests only).
    """

    he: str = "ckks"
    lr: float = 0.1
    noise_scale: float = 1.0
    activation_bound: float = 64.0
    packed: bool = True
    mask_bits: int = MASK_BITS
    key_bits: int = 2048
    precision_bits: int = 32
    insecure_small_keys_for_tests: bool = False
    workers: int | None = None
    helper: bool = True

    def __post_init__(self) -> None:
        if self.he not in SCHEMES:
            raise InputError(f"unknown HE scheme {self.he!r}; choose one of {list(SCHEMES)}")
        _number("lr", self.lr, low=0.0)
        _number("noise_scale", self.noise_scale, low=0.0, strict=False)
        _number("activation_bound", self.activation_bound, low=0.0)
        for name in ("packed", "insecure_small_keys_for_tests", "helper"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"InteractiveConfig.{name} must be bool")
        if isinstance(self.mask_bits, bool) or not isinstance(self.mask_bits, int) \
                or not 1 <= self.mask_bits <= 40:
            raise InputError(f"InteractiveConfig.mask_bits must be an int in 1..40, got {self.mask_bits!r}")
        he_config = self.he_config()  # validates key size, precision, workers; makes no key
        if self.he != "paillier":  # the Paillier fields are unused then, but a bad value is still refused
            self._paillier_config()
        if self.packed_ckks and self.activation_bound > he_config.value_limit:
            raise InputError(f"InteractiveConfig.activation_bound must be at most "
                             f"{he_config.value_limit:g} for packed CKKS, got {self.activation_bound!r}")

    def he_config(self) -> Any:
        """The HE scheme's validated configuration (no keys are generated)."""
        if self.packed_ckks:
            return make_config("ckks", **PACKED_CKKS_OPTIONS, workers=self.workers)
        if self.he == "ckks":
            return make_config("ckks", workers=self.workers)
        return self._paillier_config()

    def _paillier_config(self) -> Any:
        return make_config("paillier", key_bits=self.key_bits, precision_bits=self.precision_bits,
                           insecure_small_keys_for_tests=self.insecure_small_keys_for_tests,
                           workers=self.workers)

    @property
    def packed_ckks(self) -> bool:
        return self.he == "ckks" and self.packed

    def check_batch(self, rows: int, *, name: str = "batch_size") -> None:
        """InputError if packed CKKS cannot mask a weight gradient summed over ``rows`` activations:
        each value is below ``activation_bound * rows``, and its mask 2^mask_bits times that."""
        self._check_sum(rows, name, "rows", "their masked weight gradients")

    def check_width(self, n_in: int, *, name: str = "n_in") -> None:
        """InputError if packed CKKS cannot mask a forward product ``a @ W~`` summed over ``n_in``
        passive outputs (|W~ 2^k| <= 1, so each value is below ``activation_bound * n_in``)."""
        self._check_sum(n_in, name, "inputs", "their masked forward products")

    def _check_sum(self, terms: int, name: str, unit: str, what: str) -> None:
        if not self.packed_ckks:
            return
        room = room_bits(PACKED_CKKS_OPTIONS["coeff_mod_bit_sizes"], PACKED_CKKS_OPTIONS["scale_bits"])
        per_term = 2.0 ** bound_exponent(self.activation_bound) * (1.0 + 2.0 ** self.mask_bits)  # as encrypted
        if terms * per_term >= 2.0 ** room:
            most = math.ceil(2.0 ** room / per_term) - 1
            raise InputError(f"{name}={terms} is too many {unit} for packed CKKS with activation_bound="
                             f"{self.activation_bound:g} and mask_bits={self.mask_bits} (at most {most}: "
                             f"{what} need 2^{room}); lower one of the three")

    def make_key(self) -> Any:
        """A fresh key pair for the passive party (OS randomness)."""
        if self.packed_ckks:
            return PackedCKKSKey.generate(self.he_config())
        return BACKENDS[self.he].generate(self.he_config())


__all__ = ["SCHEMES", "InteractiveConfig"]
