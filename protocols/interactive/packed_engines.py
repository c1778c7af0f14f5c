"""The interactive layer's products slot-packed in CKKS: the fast engines.

:class:`PackedPassive` (key owner) and :class:`PackedActive` (evaluator) implement
the interfaces of :mod:`protocols.interactive.engines` with the layout of
:mod:`protocols.interactive.packing`: the key owner's side is
:mod:`protocols.interactive.ckks_engine`, the evaluator's
:mod:`protocols.interactive.ckks_evaluator`, and a helper process
(:mod:`protocols.interactive.ckks_helper`) may take half of each forward product and
every input gradient.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from protocols.errors import InputError
from protocols.he import PublicContext
from protocols.interactive import ckks_engine as packed
from protocols.interactive.ckks_engine import bound_exponent
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.ckks_helper import EvaluatorHelper, input_bound, input_grad_fields
from protocols.interactive.engines import ActiveEngine, PassiveEngine, reply_values
from protocols.interactive.packing import Plan, make_plan
from protocols.interactive.sealwire import ciphertext_from_bytes, prefixed, unprefixed


NOISE_BOUND_EXP = 6
"""eps_acc travels encrypted as eps_acc / 2^j with every lane within 2^6 (j >= 0 announced as
``scale_exp``), far inside the packed context's value limit of 2^9 however long the walk runs."""


class PackedPassive(PassiveEngine):
    """Key owner with the packed CKKS layout (secret-key encryption, complex slots)."""

    def __init__(self, secret: packed.PackedCKKSKey, n_in: int, n_out: int, bound: float) -> None:
        super().__init__(n_in, n_out, bound)
        self.core = packed.PackedKeyOwner(secret)
        self.slots = secret.public_context().config.slots
        self._noise_exp = 0  # j of the step's Enc(eps_acc / 2^j)

    def _plan(self, kind: str) -> Plan:
        shapes = {"forward": (self.rows, self.n_in, self.n_out),
                  "weight": (self.n_in, self.rows, self.n_out),
                  "input": (self.n_in, self.n_out, self.rows)}
        return make_plan(self.slots, *shapes[kind])

    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        self.rows = a.shape[0]
        return self.core.encrypt(a, self._plan("forward"), self.bound)

    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        """Enc(a.T) and Enc(eps_acc / 2^j), j = ``scale_exp`` (public) keeping the lanes within
        2^NOISE_BOUND_EXP: eps_acc is a random walk that outgrows the context's value limit."""
        exp = bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        self._noise_exp = max(0, exp - NOISE_BOUND_EXP)
        scaled = np.ldexp(noise, -self._noise_exp)
        e_fields = self.core.encrypt(scaled, self._plan("input"), 2.0 ** (exp - self._noise_exp))
        return {**prefixed("g", self.core.encrypt(a.T, self._plan("weight"), self.bound)),
                **prefixed("e", {**e_fields, "scale_exp": self._noise_exp})}

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        self._expect(kind)
        return {"values": self.core.decrypt(fields, self._plan(kind)) - minus}

    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        return np.ldexp(self.core.decrypt(fields, self._plan("input")), self._noise_exp).T


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
        return reply_values(reply, state.shape) - state

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


__all__ = ["HELPER_SHARE", "NOISE_BOUND_EXP", "PackedActive", "PackedPassive", "split_groups"]
