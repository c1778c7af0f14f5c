"""The three encrypted products of the interactive layer, behind one interface per side.

Per training step the evaluator (active party) needs, with a = the key owner's
activations (batch x n), W~ its masked weights (n x m), dz = dL/dz (batch x m) and
E = eps_acc the key owner's accumulated noise (n x m):

* forward:     Enc(a) @ W~    -> masked, decrypted by the key owner, unmasked here;
* weight grad: Enc(a).T @ dz  -> masked, decrypted by the key owner, unmasked here;
* input grad:  dz @ W~.T - dz @ Enc(E).T -> re-randomised, for the key owner to read.

:class:`GenericPassive` / :class:`GenericActive` use only the EncryptedArray API
(Paillier or CKKS; ``Enc(a)`` and ``Enc(a.T)`` both travel because ``enc @ W``
contracts the last axis only). :class:`PackedPassive` / :class:`PackedActive` (in
:mod:`protocols.interactive.ckks_engine`) run the same products slot-packed with
rotations, which is what makes CKKS fast; :func:`passive_engine` and
:func:`active_engine` pick one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Mapping

import numpy as np

from protocols.channels import AdditiveMask
from protocols.errors import DecodeError, InputError
from protocols.he import FixedPointArray, PublicContext, SecretContext
from protocols.he.fixedpoint import encode_fixed
from protocols.interactive import ckks_engine as packed
from protocols.interactive.ckks_engine import bound_exponent
from protocols.interactive.packing import Plan, make_plan
from protocols.interactive.sealwire import prefixed, unprefixed


class PassiveEngine(ABC):
    """Key owner's half: encrypt a and E, open what the evaluator returns."""

    def __init__(self, n_in: int, n_out: int, bound: float) -> None:
        self.n_in, self.n_out, self.bound, self.rows = n_in, n_out, float(bound), 0

    @abstractmethod
    def encrypt_input(self, a: np.ndarray, *, train: bool) -> dict[str, Any]:
        """Enc(a) (and what the weight gradient needs when ``train``), codec-ready."""

    @abstractmethod
    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        """Decrypt a masked product ("forward" or "weight") and subtract ``minus`` from it."""

    @abstractmethod
    def encrypt_noise(self, noise: np.ndarray) -> dict[str, Any]:
        """Enc(E) for the input gradient of the current batch."""

    @abstractmethod
    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        """dL/da (batch x n_in) from the evaluator's re-randomised ciphertexts."""

    def _expect(self, kind: str) -> tuple[int, int]:
        if kind not in ("forward", "weight"):
            raise InputError(f"unknown product kind {kind!r}")
        return (self.rows, self.n_out) if kind == "forward" else (self.n_in, self.n_out)


class ActiveEngine(ABC):
    """Evaluator's half: the products with its plaintext matrices."""

    def __init__(self, n_in: int, n_out: int) -> None:
        self.n_in, self.n_out, self.rows = n_in, n_out, 0

    @abstractmethod
    def load_input(self, fields: Mapping[str, Any], *, rows: int, train: bool) -> None:
        """Take Enc(a) of a batch of ``rows`` rows."""

    @abstractmethod
    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        """Masked Enc(a @ w) fields and the mask state."""

    @abstractmethod
    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        """Masked Enc(a.T @ dz) fields and the mask state."""

    @abstractmethod
    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        """The key owner's reply minus the mask."""

    @abstractmethod
    def input_grad(self, noise: Mapping[str, Any], dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        """Enc(dz @ w.T - dz @ E.T) fields (batch x n_in, transposed on the wire)."""


def _check_shape(what: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if tuple(shape) != tuple(expected):
        raise DecodeError(f"{what} has shape {tuple(shape)}, expected {tuple(expected)}")


class GenericPassive(PassiveEngine):
    """Key owner over the EncryptedArray API (Paillier: exact fixed point)."""

    def __init__(self, secret: SecretContext, n_in: int, n_out: int, bound: float) -> None:
        super().__init__(n_in, n_out, bound)
        self.secret, self.public = secret, secret.public_context()

    def encrypt_input(self, a: np.ndarray, *, train: bool) -> dict[str, Any]:
        self.rows = a.shape[0]
        fields = prefixed("f", self.public.encrypt(a, bound=self.bound).to_fields())
        if train:
            fields.update(prefixed("g", self.public.encrypt(a.T, bound=self.bound).to_fields()))
        return fields

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        array = self.public.array_from_fields(fields)
        _check_shape(f"masked {kind} product", array.shape, self._expect(kind))
        raw = self.secret.decrypt_raw(array)
        if isinstance(raw, FixedPointArray):  # exact: subtract in the integers, mask intact
            values = raw.values - encode_fixed(minus, raw.scale_bits)
            return FixedPointArray(np.asarray(values, dtype=object), raw.scale_bits).to_fields()
        return {"values": np.asarray(raw, dtype=np.float64) - minus}

    def encrypt_noise(self, noise: np.ndarray) -> dict[str, Any]:
        bound = 2.0 ** bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        return self.public.encrypt(noise, bound=bound).to_fields()

    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        array = self.public.array_from_fields(fields)
        _check_shape("input gradient", array.shape, (self.n_in, self.rows))
        return self.secret.decrypt(array).T


class GenericActive(ActiveEngine):
    """Evaluator over the EncryptedArray API; masks with AdditiveMask."""

    def __init__(self, public: PublicContext, n_in: int, n_out: int) -> None:
        super().__init__(n_in, n_out)
        self.public = public
        self._a: Any = None
        self._a_t: Any = None

    def load_input(self, fields: Mapping[str, Any], *, rows: int, train: bool) -> None:
        self.rows = rows
        self._a = self.public.array_from_fields(unprefixed("f", fields))
        _check_shape("Enc(a)", self._a.shape, (rows, self.n_in))
        self._a_t = self.public.array_from_fields(unprefixed("g", fields)) if train else None
        if train:
            _check_shape("Enc(a.T)", self._a_t.shape, (self.n_in, rows))

    def _masked(self, product: Any) -> tuple[dict[str, Any], AdditiveMask]:
        mask = AdditiveMask.draw(self.public, like=product)
        return mask.apply(product).to_fields(), mask

    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        return self._masked(self._a @ w)

    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        if self._a_t is None:
            raise InputError("no training batch is loaded")
        return self._masked(self._a_t @ dz)

    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        if self.public.scheme == "paillier":
            return state.remove(FixedPointArray.from_fields(reply))
        return state.remove(reply["values"])

    def input_grad(self, noise: Mapping[str, Any], dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        enc_e = self.public.array_from_fields(noise)
        _check_shape("Enc(E)", enc_e.shape, (self.n_in, self.n_out))
        out = (dz @ w.T).T - enc_e @ dz.T
        zeros = np.zeros(out.lane_shape, dtype=object if self.public.scheme == "paillier" else float)
        return (out + out.encrypt_lanes(zeros, 0)).to_fields()  # fresh randomness for the key owner


class PackedPassive(PassiveEngine):
    """Key owner with the packed CKKS layout (secret-key encryption, complex slots)."""

    def __init__(self, secret: packed.PackedCKKSKey, n_in: int, n_out: int, bound: float) -> None:
        super().__init__(n_in, n_out, bound)
        self.core = packed.PackedKeyOwner(secret)
        self.slots = secret.public_context().config.slots

    def _plan(self, kind: str) -> Plan:
        shapes = {"forward": (self.rows, self.n_in, self.n_out),
                  "weight": (self.n_in, self.rows, self.n_out),
                  "input": (self.n_in, self.n_out, self.rows)}
        return make_plan(self.slots, *shapes[kind])

    def encrypt_input(self, a: np.ndarray, *, train: bool) -> dict[str, Any]:
        self.rows = a.shape[0]
        fields = prefixed("f", self.core.encrypt(a, self._plan("forward"), self.bound))
        if train:
            fields.update(prefixed("g", self.core.encrypt(a.T, self._plan("weight"), self.bound)))
        return fields

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        self._expect(kind)
        return {"values": self.core.decrypt(fields, self._plan(kind)) - minus}

    def encrypt_noise(self, noise: np.ndarray) -> dict[str, Any]:
        bound = 2.0 ** bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        return self.core.encrypt(noise, self._plan("input"), bound)

    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        return self.core.decrypt(fields, self._plan("input")).T


class PackedActive(ActiveEngine):
    """Evaluator with the packed CKKS layout."""

    def __init__(self, public: PublicContext, n_in: int, n_out: int, *,
                 mask_bits: int = packed.MASK_BITS) -> None:
        super().__init__(n_in, n_out)
        self.core = packed.PackedEvaluator(public, mask_bits=mask_bits)  # type: ignore[arg-type]
        self.slots = self.core.seal.slots
        self._inputs: dict[str, tuple[list[Any], Plan, float]] = {}

    def _load(self, fields: Mapping[str, Any], plan: Plan) -> tuple[list[Any], Plan, float]:
        bound = fields.get("bound_exp")
        if isinstance(bound, bool) or not isinstance(bound, int) or not 0 <= bound <= 64:
            raise DecodeError("packed input lacks a valid bound_exp")
        return self.core.load(fields, plan), plan, 2.0 ** bound

    def load_input(self, fields: Mapping[str, Any], *, rows: int, train: bool) -> None:
        self.rows = rows
        self._inputs = {"forward": self._load(unprefixed("f", fields),
                                              make_plan(self.slots, rows, self.n_in, self.n_out))}
        if train:
            self._inputs["weight"] = self._load(unprefixed("g", fields),
                                                make_plan(self.slots, self.n_in, rows, self.n_out))

    def _masked(self, kind: str, m: np.ndarray) -> tuple[dict[str, Any], Any]:
        if kind not in self._inputs:
            raise InputError(f"no encrypted input loaded for the {kind} product")
        cts, plan, bound = self._inputs[kind]
        outs, exponent = self.core.product(cts, m, plan)
        return self.core.masked(outs, plan, exponent, bound)

    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        return self._masked("forward", w)

    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        return self._masked("weight", dz)

    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        values = np.asarray(reply["values"], dtype=np.float64)
        _check_shape("masked reply", values.shape, state.shape)
        return values - state

    def input_grad(self, noise: Mapping[str, Any], dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        plan = make_plan(self.slots, self.n_in, self.n_out, self.rows)
        cts, _, bound = self._load(noise, plan)
        outs, exponent = self.core.product(cts, -dz.T, plan)
        return self.core.revealed(outs, plan, exponent, bound, (dz @ w.T).T)


def passive_engine(secret: SecretContext, n_in: int, n_out: int, bound: float) -> PassiveEngine:
    """The packed engine for a :class:`PackedCKKSKey`, the generic one otherwise."""
    if isinstance(secret, packed.PackedCKKSKey):
        return PackedPassive(secret, n_in, n_out, bound)
    return GenericPassive(secret, n_in, n_out, bound)


def active_engine(public: PublicContext, n_in: int, n_out: int, *, packed_layout: bool,
                  mask_bits: int = packed.MASK_BITS) -> ActiveEngine:
    """The evaluator's engine matching the key owner's announcement."""
    if packed_layout:
        return PackedActive(public, n_in, n_out, mask_bits=mask_bits)
    return GenericActive(public, n_in, n_out)


__all__ = ["ActiveEngine", "GenericActive", "GenericPassive", "PackedActive", "PackedPassive",
           "PassiveEngine", "active_engine", "passive_engine"]
