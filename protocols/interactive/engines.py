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

The key owner sends ``Enc(a)`` first and ``Enc(a.T)`` with ``Enc(E)`` in a second
message (:meth:`PassiveEngine.encrypt_backward`), so that it encrypts them while the
evaluator computes the forward product; the evaluator may start the input gradient
in a helper process while it computes the weight gradient
(:meth:`ActiveEngine.start_input_grad`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Mapping

import numpy as np

from protocols.channels import AdditiveMask
from protocols.errors import DecodeError, InputError
from protocols.he import FixedPointArray, PublicContext, SecretContext
from protocols.he.fixedpoint import encode_fixed
from protocols.interactive import ckks_engine as packed
from protocols.interactive.ckks_engine import bound_exponent
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.ckks_helper import EvaluatorHelper, input_bound, input_grad_fields
from protocols.interactive.packing import Plan, make_plan
from protocols.interactive.sealwire import ciphertext_from_bytes, prefixed, unprefixed


class PassiveEngine(ABC):
    """Key owner's half: encrypt a and E, open what the evaluator returns."""

    def __init__(self, n_in: int, n_out: int, bound: float) -> None:
        self.n_in, self.n_out, self.bound, self.rows = n_in, n_out, float(bound), 0

    @abstractmethod
    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        """Enc(a) for the forward product, codec-ready."""

    @abstractmethod
    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        """Enc(a.T) (prefix ``g``) for the weight gradient and Enc(E) (prefix ``e``) for the input gradient."""

    @abstractmethod
    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        """Decrypt a masked product ("forward" or "weight") and subtract ``minus`` from it."""

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
    def load_input(self, fields: Mapping[str, Any], *, rows: int) -> None:
        """Take Enc(a) of a batch of ``rows`` rows."""

    @abstractmethod
    def load_backward(self, fields: Mapping[str, Any]) -> None:
        """Take Enc(a.T) and Enc(E) of the loaded batch (a training step)."""

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
    def input_grad(self, dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        """Enc(dz @ w.T - dz @ E.T) fields (batch x n_in, transposed on the wire)."""

    def prepare_forward(self, w: np.ndarray) -> None:
        """Say that the next :meth:`forward` will likely take ``w`` (work may start now; here: none)."""

    def start_input_grad(self, dz: np.ndarray, w: np.ndarray) -> Callable[[], dict[str, Any]]:
        """Begin :meth:`input_grad`; the returned call gives its fields (here: computes them then)."""
        dz, w = np.array(dz, copy=True), np.array(w, copy=True)
        return lambda: self.input_grad(dz, w)

    def close(self) -> None:
        """Release helper processes (none here)."""


def _check_shape(what: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> None:
    if tuple(shape) != tuple(expected):
        raise DecodeError(f"{what} has shape {tuple(shape)}, expected {tuple(expected)}")


class GenericPassive(PassiveEngine):
    """Key owner over the EncryptedArray API (Paillier: exact fixed point)."""

    def __init__(self, secret: SecretContext, n_in: int, n_out: int, bound: float) -> None:
        super().__init__(n_in, n_out, bound)
        self.secret, self.public = secret, secret.public_context()

    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        self.rows = a.shape[0]
        return self.public.encrypt(a, bound=self.bound).to_fields()

    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        bound = 2.0 ** bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        return {**prefixed("g", self.public.encrypt(a.T, bound=self.bound).to_fields()),
                **prefixed("e", self.public.encrypt(noise, bound=bound).to_fields())}

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        array = self.public.array_from_fields(fields)
        _check_shape(f"masked {kind} product", array.shape, self._expect(kind))
        raw = self.secret.decrypt_raw(array)
        if isinstance(raw, FixedPointArray):  # exact: subtract in the integers, mask intact
            values = raw.values - encode_fixed(minus, raw.scale_bits)
            return FixedPointArray(np.asarray(values, dtype=object), raw.scale_bits).to_fields()
        return {"values": np.asarray(raw, dtype=np.float64) - minus}

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
        self._e: Any = None

    def load_input(self, fields: Mapping[str, Any], *, rows: int) -> None:
        self.rows, self._a_t, self._e = rows, None, None
        self._a = self.public.array_from_fields(fields)
        _check_shape("Enc(a)", self._a.shape, (rows, self.n_in))

    def load_backward(self, fields: Mapping[str, Any]) -> None:
        self._a_t = self.public.array_from_fields(unprefixed("g", fields))
        _check_shape("Enc(a.T)", self._a_t.shape, (self.n_in, self.rows))
        self._e = self.public.array_from_fields(unprefixed("e", fields))
        _check_shape("Enc(E)", self._e.shape, (self.n_in, self.n_out))

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

    def input_grad(self, dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        if self._e is None:
            raise InputError("no training batch is loaded")
        out = (dz @ w.T).T - self._e @ dz.T
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

    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        self.rows = a.shape[0]
        return self.core.encrypt(a, self._plan("forward"), self.bound)

    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        bound = 2.0 ** bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        return {**prefixed("g", self.core.encrypt(a.T, self._plan("weight"), self.bound)),
                **prefixed("e", self.core.encrypt(noise, self._plan("input"), bound))}

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        self._expect(kind)
        return {"values": self.core.decrypt(fields, self._plan(kind)) - minus}

    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        return self.core.decrypt(fields, self._plan("input")).T


HELPER_SHARE = 0.5
"""Fraction of a forward product's giant groups that the helper process computes."""


def split_groups(giant: int, share: float | None = None) -> int:
    """The first giant group of the helper's part of a forward product (at least one each)."""
    share = HELPER_SHARE if share is None else share
    return min(giant - 1, max(1, round(giant * (1.0 - share))))


class PackedActive(ActiveEngine):
    """Evaluator with the packed CKKS layout; ``helper``: a helper process takes half of each
    forward product and every input gradient (:mod:`protocols.interactive.ckks_helper`)."""

    def __init__(self, public: PublicContext, n_in: int, n_out: int, *,
                 mask_bits: int = packed.MASK_BITS, helper: bool = False) -> None:
        super().__init__(n_in, n_out)
        self.core = PackedEvaluator(public, mask_bits=mask_bits)  # type: ignore[arg-type]
        self.slots = self.core.seal.slots
        self.helper = EvaluatorHelper(public, mask_bits=mask_bits) if helper else None  # type: ignore[arg-type]
        self._inputs: dict[str, tuple[list[Any], Plan, float]] = {}
        self._noise: Mapping[str, Any] | None = None
        self._forward: Mapping[str, Any] = {}
        self._prepared: tuple[int, np.ndarray] | None = None  # (version, w) the helper encoded

    def _load(self, fields: Mapping[str, Any], plan: Plan) -> tuple[list[Any], Plan, float]:
        bound = input_bound(fields)
        return self.core.load(fields, plan), plan, bound

    def load_input(self, fields: Mapping[str, Any], *, rows: int) -> None:
        self.rows, self._noise, self._forward = rows, None, fields
        self._inputs = {"forward": self._load(fields, make_plan(self.slots, rows, self.n_in, self.n_out))}

    def load_backward(self, fields: Mapping[str, Any]) -> None:
        self._inputs["weight"] = self._load(unprefixed("g", fields),
                                            make_plan(self.slots, self.n_in, self.rows, self.n_out))
        self._noise = unprefixed("e", fields)  # loaded (and validated) where the product runs

    def _masked(self, kind: str, m: np.ndarray) -> tuple[dict[str, Any], Any]:
        if kind not in self._inputs:
            raise InputError(f"no encrypted input loaded for the {kind} product")
        cts, plan, bound = self._inputs[kind]
        outs, exponent = self.core.product(cts, m, plan)
        return self.core.masked(outs, plan, exponent, bound)

    def prepare_forward(self, w: np.ndarray) -> None:
        """Let the helper encode its part of ``w``'s diagonals while it would wait anyway."""
        plan = make_plan(self.slots, 1, self.n_in, self.n_out)  # the diagonals do not depend on rows
        if self.helper is None or plan.giant < 2:
            return
        version = 1 if self._prepared is None else self._prepared[0] + 1
        self._prepared = (version, np.array(w, dtype=np.float64, copy=True))
        self.helper.prepare(version, self._prepared[1], plan, range(split_groups(plan.giant), plan.giant))

    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        if self.helper is None or "forward" not in self._inputs or self._inputs["forward"][1].giant < 2:
            return self._masked("forward", w)
        cts, plan, bound = self._inputs["forward"]
        start = split_groups(plan.giant)  # the helper takes the giant groups from here on
        spare = max(0, 2 * plan.n_outputs - len(self.core.zeros))  # this product's and the weight's
        version = self._prepared[0] if self._prepared and np.array_equal(self._prepared[1], w) else None
        steps, pending = self.helper.partial(self._forward, w, plan, range(start, plan.giant), spare, version)
        prepared = self.core.plaintexts(w, plan, range(start))  # while the helper rotates the inputs
        public = self.core.seal.public
        baby = [[ct, *(ciphertext_from_bytes(public, blob) for blob in blobs)] for ct, blobs in zip(cts, steps())]
        outs, exponent = self.core.product(cts, w, plan, range(start), prepared, baby)
        blobs, zeros = pending()
        parts = [None if blob is None else ciphertext_from_bytes(public, blob) for blob in blobs]
        self.core.zeros += [ciphertext_from_bytes(public, blob) for blob in zeros]
        return self.core.masked(self.core.join(outs, parts, plan, start), plan, exponent, bound)

    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        return self._masked("weight", dz)

    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        values = np.asarray(reply["values"], dtype=np.float64)
        _check_shape("masked reply", values.shape, state.shape)
        return values - state

    def _noise_fields(self) -> Mapping[str, Any]:
        if self._noise is None:
            raise InputError("no training batch is loaded")
        return self._noise

    def input_grad(self, dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        return input_grad_fields(self.core, self._noise_fields(), dz, w)

    def start_input_grad(self, dz: np.ndarray, w: np.ndarray) -> Callable[[], dict[str, Any]]:
        if self.helper is None:
            return super().start_input_grad(dz, w)
        return self.helper.input_grad(self._noise_fields(), dz, w)

    def close(self) -> None:
        if self.helper is not None:
            self.helper.close()


def passive_engine(secret: SecretContext, n_in: int, n_out: int, bound: float) -> PassiveEngine:
    """The packed engine for a :class:`PackedCKKSKey`, the generic one otherwise."""
    if isinstance(secret, packed.PackedCKKSKey):
        return PackedPassive(secret, n_in, n_out, bound)
    return GenericPassive(secret, n_in, n_out, bound)


def active_engine(public: PublicContext, n_in: int, n_out: int, *, packed_layout: bool,
                  mask_bits: int = packed.MASK_BITS, helper: bool = False) -> ActiveEngine:
    """The evaluator's engine matching the key owner's announcement (``helper``: packed only)."""
    if packed_layout:
        return PackedActive(public, n_in, n_out, mask_bits=mask_bits, helper=helper)
    return GenericActive(public, n_in, n_out)


__all__ = ["ActiveEngine", "GenericActive", "GenericPassive", "PackedActive", "PackedPassive",
           "PassiveEngine", "active_engine", "passive_engine"]
