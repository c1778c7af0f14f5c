"""The active party of HE-VFL: its half of the network and its training and scoring loop.

:func:`baselines.he_vfl.he_vfl_active` runs PSI, builds an :class:`ActiveRun` and
drives it; this module holds what that role does after PSI: the active model
(bottom model, the active half of the interactive layer, top model) around the
secure layer's passive half, the epochs of batches it announces to the passive
party under ``Tag(step, STAGE, "batch")``, forward-only scoring, and the schedule
fields (steps done, times projected to the whole schedule) of a timing run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from baselines.splitnn import (DTYPE, active_interactive_init, active_share, batches, bottom_model, loss_and_logits,
                               share_bound, top_model)
from protocols.codec import Tag
from protocols.interactive import ActiveInteractive
from protocols.transport import Transport

if TYPE_CHECKING:
    from baselines.he_vfl import HEVFLConfig

STAGE = "he_vfl"
KINDS = ("train", "eval", "stop")


def tensor(values: np.ndarray, device: torch.device) -> torch.Tensor:
    """``values`` as a tensor of the split NN's dtype on ``device``."""
    return torch.tensor(values, dtype=DTYPE, device=device)


@dataclass
class ActiveModel:
    """The active party's network: its bottom model, its interactive weights and bias, the top model."""

    bottom: torch.nn.Module
    w_active: torch.Tensor
    bias: torch.Tensor
    top: torch.nn.Module
    layer: ActiveInteractive

    def forward(self, xa: torch.Tensor, step: int, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """z (pre-activation) and the leaf z_p that receives dL/dz."""
        z_p = tensor(self.layer.forward(step=step, rows=xa.shape[0], train=train), xa.device)
        z_p.requires_grad_(train)
        return self.bottom(xa) @ self.w_active + z_p + self.bias, z_p


def active_model(transport: Transport, passive: str, n_features: int, config: HEVFLConfig,
                 device: torch.device) -> ActiveModel:
    """Set up the secure layer with the passive party and build the model (the split NN's initialisation)."""
    n_out = config.active_widths(n_features, 1).interactive
    layer = ActiveInteractive(transport, passive=passive, n_out=n_out, config=config.interactive_config())
    held: dict[str, Any] = {}

    def init_bound(bottom_passive: int) -> float:  # each party draws its share of the initial W within it
        held["widths"] = config.active_widths(n_features, bottom_passive)
        held["w_active"], held["bias"] = active_interactive_init(held["widths"], config.seed)
        return share_bound(held["widths"])

    def share(n_in: int, bound: float) -> np.ndarray:  # this party's share: the passive party never sees it
        return active_share((n_in, held["widths"].interactive), bound, config.share_seed)

    layer.setup(init_bound, share=share)
    widths = held["widths"]
    return ActiveModel(bottom_model(n_features, widths.bottom_active, config.seed, "active", device),
                       tensor(held["w_active"], device).requires_grad_(True),
                       tensor(held["bias"], device).requires_grad_(True),
                       top_model(widths, config.seed, device), layer)


@dataclass
class ActiveRun:
    """The active party's state during training: its rows in PSI order and its model."""

    transport: Transport
    passive: str
    config: HEVFLConfig
    model: ActiveModel
    position: dict[str, int]
    x: np.ndarray
    y: np.ndarray
    device: torch.device
    step: int = 0
    first_step_s: float = 0.0  # the first training step, which also warms up (helper, caches)

    def send_batch(self, kind: str, ids: list[str]) -> np.ndarray:
        self.step += 1
        pos = np.array([self.position[v] for v in ids], dtype=np.int64)
        self.transport.send(self.passive, Tag(self.step, STAGE, "batch"), kind=kind, rows=pos)
        return pos

    def train(self, train: list[str]) -> tuple[int, int]:
        """Epochs of SGD/Adam steps through the secure layer; returns (epochs, steps) done."""
        config, model = self.config, self.model
        adam = torch.optim.Adam([*model.bottom.parameters(), *model.top.parameters()], lr=config.lr, foreach=True)
        sgd = torch.optim.SGD([model.w_active, model.bias], lr=config.interactive_lr, foreach=True)
        steps, start = 0, time.perf_counter()
        for epoch in range(config.epochs):
            for ids in batches(train, config.batch_size, config.seed, epoch):
                if config.max_steps is not None and steps >= config.max_steps:
                    return epoch, steps
                pos = self.send_batch("train", ids)
                z, z_p = model.forward(tensor(self.x[pos], self.device), self.step, True)
                loss, _ = loss_and_logits(model.top, z, tensor(self.y[pos], self.device))
                adam.zero_grad()
                sgd.zero_grad()
                loss.backward()
                model.layer.backward(z_p.grad.detach().cpu().numpy(), step=self.step)
                adam.step()
                sgd.step()
                steps += 1
                if steps == 1:
                    self.first_step_s = time.perf_counter() - start
            if config.progress is not None:
                config.progress(epoch + 1, config.epochs)
        return config.epochs, steps

    def predict(self, test: list[str]) -> np.ndarray:
        """Forward-only scores for the test rows, then tell the passive party to stop."""
        scores = []
        size, limit = self.config.batch_size, self.config.max_eval_batches
        with torch.no_grad():
            for begin in range(0, len(test) if limit is None else min(len(test), limit * size), size):
                pos = self.send_batch("eval", test[begin:begin + self.config.batch_size])
                z, _ = self.model.forward(tensor(self.x[pos], self.device), self.step, False)
                _, logits = loss_and_logits(self.model.top, z, tensor(self.y[pos], self.device))
                scores.append(torch.sigmoid(logits).cpu().numpy())
        self.send_batch("stop", [])
        return np.concatenate(scores)


def schedule_fields(run: ActiveRun, phases: dict[str, float], epochs: int, steps: int,
                     train_rows: int, test_rows: int, scored_rows: int) -> dict[str, Any]:
    """Rows, steps done and the times projected to the whole schedule (see HEVFLConfig)."""
    total = run.config.total_steps(train_rows)
    return {"train_rows": train_rows, "test_rows": test_rows, "epochs": epochs, "steps": steps,
            "total_steps": total, "step_seconds": phases["training"] / max(steps, 1),
            "first_step_s": run.first_step_s,
            "projected_training_s": project_training(phases["training"], run.first_step_s, steps, total),
            "scored_rows": scored_rows,
            "projected_inference_s": phases["inference"] * test_rows / scored_rows}


def project_training(seconds: float, first_step_s: float, steps: int, total: int) -> float:
    """Training time of ``total`` steps from ``seconds`` for the first ``steps``.

    The first step also waits for one-off work (the packed evaluator's helper loading
    the context, first-touch allocations), so it is counted once, and the others'
    mean stands for every later step.
    """
    if steps < 2 or not 0.0 < first_step_s <= seconds:
        return seconds * total / max(steps, 1)
    return first_step_s + (seconds - first_step_s) * (total - 1) / (steps - 1)


def active_weights(model: ActiveModel) -> dict[str, np.ndarray]:
    """The final parameters, for tests (the interactive layer's passive half as W~, never W)."""
    out = {f"bottom_active.{k}": v.detach().cpu().numpy() for k, v in model.bottom.state_dict().items()}
    out.update({f"top.{k}": v.detach().cpu().numpy() for k, v in model.top.state_dict().items()})
    out.update({"interactive.w_active": model.w_active.detach().cpu().numpy(),
                "interactive.bias": model.bias.detach().cpu().numpy(),
                "interactive.masked_w_passive": model.layer.weight.copy()})
    return out


__all__ = ["KINDS", "STAGE", "ActiveModel", "ActiveRun", "active_model", "active_weights", "project_training",
           "schedule_fields", "tensor"]
