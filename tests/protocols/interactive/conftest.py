"""Running the interactive layer's two roles on scripted batches, and the numpy reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from protocols.interactive import ActiveInteractive, InteractiveConfig, PassiveInteractive
from protocols.transport import RunResult, Transport, run_parties

CONFIGS = {
    "paillier": InteractiveConfig(he="paillier", key_bits=512, insecure_small_keys_for_tests=True,
                                  lr=0.5),
    "ckks": InteractiveConfig(he="ckks", lr=0.5, helper=False),
    "ckks-generic": InteractiveConfig(he="ckks", packed=False, lr=0.5, mask_bits=8),  # all its value limit allows
}
TOLERANCE = {"paillier": 1e-7, "ckks": 1e-6, "ckks-generic": 1e-3}


@dataclass(frozen=True)
class Batch:
    """Activations a; dz for a training step (None: evaluation, forward only)."""

    a: np.ndarray
    dz: np.ndarray | None


def passive_role(t: Transport, *, config: InteractiveConfig, batches: list[Batch], w0: np.ndarray
                 ) -> dict[str, Any]:
    layer = PassiveInteractive(t, active="active", n_in=batches[0].a.shape[1], config=config)
    layer.setup(lambda n_out, bound: w0)  # the passive party draws the initial weights
    initial_noise = layer.noise.copy()
    grads = []
    for step, batch in enumerate(batches, start=1):
        layer.forward(batch.a, step=step, train=batch.dz is not None)
        if batch.dz is not None:
            grads.append(layer.backward(step=step))
    return {"grads": grads, "noise": layer.noise, "initial_noise": initial_noise}


def active_role(t: Transport, *, config: InteractiveConfig, batches: list[Batch],
                w0: np.ndarray, r0: np.ndarray | None = None) -> dict[str, Any]:
    layer = ActiveInteractive(t, passive="passive", n_out=w0.shape[1], config=config)
    share = np.zeros_like(w0) if r0 is None else r0  # the active party's share: W = w0 + r0
    layer.setup(lambda n_in: 1.0, share=lambda n_in, bound: share)
    initial = layer.weight.copy()
    outputs = []
    for step, batch in enumerate(batches, start=1):
        outputs.append(layer.forward(step=step, rows=batch.a.shape[0], train=batch.dz is not None))
        if batch.dz is not None:
            layer.backward(batch.dz, step=step)
    return {"outputs": outputs, "masked_weight": layer.weight, "initial_masked_weight": initial}


def run_layer(config: InteractiveConfig, batches: list[Batch], w0: np.ndarray, *,
              record: bool = False, r0: np.ndarray | None = None) -> RunResult:
    """The two roles; the passive party's share of the initial W is ``w0``, the active party's
    ``r0`` (default zeros, so that W = w0)."""
    return run_parties({"passive": passive_role, "active": active_role}, record=record,
                       kwargs={"passive": {"config": config, "batches": batches, "w0": w0},
                               "active": {"config": config, "batches": batches, "w0": w0, "r0": r0}})


def reference(batches: list[Batch], w0: np.ndarray, lr: float) -> tuple[list, list, np.ndarray]:
    """z per batch, dL/da per training batch and the final W, in the clear (plain SGD)."""
    w, outputs, grads = w0.copy(), [], []
    for batch in batches:
        outputs.append(batch.a @ w)
        if batch.dz is not None:
            grads.append(batch.dz @ w.T)
            w = w - lr * batch.a.T @ batch.dz
    return outputs, grads, w


def make_batches(rng: np.random.Generator, n_in: int, n_out: int, rows: list[int],
                 train: list[bool]) -> list[Batch]:
    return [Batch(np.maximum(rng.normal(size=(r, n_in)), 0.0),
                  rng.normal(size=(r, n_out)) * 0.1 if is_train else None)
            for r, is_train in zip(rows, train)]


@pytest.fixture(params=sorted(CONFIGS))
def scheme(request: pytest.FixtureRequest) -> str:
    return request.param
