"""Which epoch's weights a GL-family client is evaluated with (``GLConfig.select``).

"last" (default, the paper as written): the weights after the last local epoch.
"val_loss" / "val_auroc": after every local epoch (with per-epoch averaging, before
that round's average, so what is kept is the client's own state, as "last" keeps it)
the client scores its validation rows, which training never sees, and keeps the state
of the epoch with the lowest loss or highest AUROC (ties: the later epoch); the test
rows are scored once, with that state. Each client decides alone, from its own rows; nothing is sent. The
paper does not say it selects an epoch, but the authors ship a validation split with
every heart seed, and their heart AUROCs sit above our last-epoch ones
(benchmarks/RESULTS.md, GL).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from protocols.errors import InputError
from securefl.runtime.classification import classification_metrics

SELECT = ("last", "val_loss", "val_auroc")


def validation_loss(y: np.ndarray, probs: np.ndarray) -> float:
    """Mean cross-entropy of ``probs`` (P(class 1) for one column, else class probabilities)."""
    p = probs if probs.ndim == 2 else np.stack([1.0 - probs, probs], axis=1)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, 1.0))))


def check_validation(select: str, data: Any) -> None:
    """InputError if ``select`` scores validation rows and client ``data`` has none."""
    if select != "last" and (data.x_val is None or len(data.y_val) == 0):
        raise InputError(f"client {data.name!r} has no validation rows, which select={select!r} needs"
                         " (a table split per seed has them; fixed train/test files do not)")


class EpochPicker:
    """Scores a client's validation rows after each epoch and keeps the best epoch's state."""

    def __init__(self, select: str, data: Any, device: torch.device) -> None:
        if select not in SELECT:
            raise InputError(f"select must be one of {SELECT}, got {select!r}")
        self.select, self.history, self.epoch, self._best, self._score = select, [], None, None, -math.inf
        if select == "last":
            return
        check_validation(select, data)
        self.x_val = torch.from_numpy(np.array(data.x_val, dtype=np.float32)).to(device)
        self.y_val = np.asarray(data.y_val, dtype=np.int64)

    def see(self, model: torch.nn.Module, epoch: int, probabilities: Any) -> None:
        """After ``epoch`` (1-based): score the validation rows; keep the state if it is the best so far."""
        if self.select == "last":
            return
        probs = probabilities(model, self.x_val)
        if self.select == "val_loss":
            value = validation_loss(self.y_val, probs)
            score = -value
        else:
            value = classification_metrics(self.y_val, probs)["auroc"]
            score = -math.inf if value is None or not math.isfinite(value) else value
        self.history.append(None if value is None or not math.isfinite(value) else float(value))
        if score >= self._score:
            self._score, self.epoch = score, epoch
            self._best = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def restore(self, model: torch.nn.Module, epochs: int) -> int:
        """Load the kept state into ``model``; the epoch it comes from (``epochs`` for "last" or no score)."""
        if self._best is None:
            return epochs
        model.load_state_dict(self._best)
        return int(self.epoch)


__all__ = ["EpochPicker", "SELECT", "check_validation", "validation_loss"]
