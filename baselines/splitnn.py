"""Plaintext split neural network with exactly the structure of HE-VFL (the reference).

The network of the STFL paper's "FATE" baseline: a bottom model per party (one
dense layer, n_g hidden nodes, ReLU), an interactive layer joining both bottom
outputs (n_h nodes, ReLU), a top model (n_h hidden nodes, ReLU, one logit), sigmoid
and binary cross-entropy. Widths follow the paper's rule "5 times the number of
input features": each party's bottom width is 5x its own feature count, and
n_h = 5x the active party's (the paper's host) feature count; all can be
overridden. Batch size 128, Adam (lr 1e-3) for the bottom and top models, 100
epochs. The interactive layer is updated by plain SGD at ``interactive_lr``,
because under HE-VFL's noise masking no party sees its true gradient (see
:mod:`protocols.interactive.layer`; FATE does the same).

:func:`train_splitnn` runs this in one process, in the clear: the reference that
HE-VFL must match weight for weight (same seed -> same initialisation, same batch
order, same float64 arithmetic) and a fast plaintext baseline. Rows are the
intersection of the parties' IDs; the active party standardises its features on
its training rows, the passive party on all of its own rows (it is never told
which rows are for training).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from baselines.splitnn_models import (DTYPE, Widths, active_interactive_init, active_share, bottom_model,
                                      interactive_bound, interactive_init, passive_weights, share_bound, top_model)
from protocols.errors import InputError
from securefl.algorithms.training import binary_labels
from securefl.data import PartyTable, VerticalSplit
from securefl.models.scaling import Standardizer
from securefl.runtime import SeedPlan, binary_metrics, finite_scores, resolve_device
from securefl.runtime import validation as check

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SplitNNConfig:
    """Training settings shared by the split NN and HE-VFL (paper defaults).

    ``progress`` (optional, local only) is called as ``progress(epoch, total)`` after
    each training epoch, e.g. to drive a progress bar. The passive half of the initial
    interactive weights is the sum of two shares (:func:`interactive_init`): the passive
    party's, from ``passive_seed``, and the active party's, from ``share_seed``. None: in
    HE-VFL each drawn from the OS, so that the other party cannot know it; here from ``seed``.
    """

    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-3
    interactive_lr: float = 0.1
    seed: int = 0
    device: str = "cpu"
    bottom_active: int | None = None
    bottom_passive: int | None = None
    interactive: int | None = None
    top: int | None = None
    passive_seed: int | None = None
    share_seed: int | None = None
    progress: Progress | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check.callback(owner, "progress", self.progress)
        check.positive_int(owner, "epochs", self.epochs)
        check.positive_int(owner, "batch_size", self.batch_size)
        check.positive_number(owner, "lr", self.lr)
        check.positive_number(owner, "interactive_lr", self.interactive_lr)
        for name in ("bottom_active", "bottom_passive", "interactive", "top"):
            check.positive_int(owner, name, getattr(self, name), optional=True)
        check.seed(owner, self.seed)
        for name in ("passive_seed", "share_seed"):
            if getattr(self, name) is not None:
                check.seed(owner, getattr(self, name), name=name)
        check.device(owner, self.device)

    def widths(self, n_active: int, n_passive: int) -> Widths:
        """The paper's rule (5x input features), with any width given here taking precedence."""
        return self.active_widths(n_active, self.passive_width(n_passive))

    def passive_width(self, n_passive: int) -> int:
        """The passive party's bottom width: what only it can compute (from its feature count)."""
        return self.bottom_passive or 5 * n_passive

    def active_widths(self, n_active: int, bottom_passive: int) -> Widths:
        """All widths, given the passive party's announced bottom width."""
        interactive = self.interactive or 5 * n_active
        return Widths(self.bottom_active or 5 * n_active, bottom_passive, interactive,
                      self.top or interactive)

    def settings(self) -> dict[str, Any]:
        """The JSON-ready settings (everything but the progress callback)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "progress"}


def standardizer(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std (1 where a column is constant) of the rows a party fits on.

    A constant column's std comes out of floating point as ~1e-24 rather than 0, which
    would blow a different test value up by as much; Standardizer's rule catches it."""
    fitted = Standardizer.fit(features)
    return fitted.mean, fitted.scale


def batches(ids: Sequence[str], batch_size: int, seed: int, epoch: int) -> Iterator[list[str]]:
    """The batch order of one epoch: sorted IDs permuted by ``batches:<epoch>``."""
    ordered = sorted(ids)
    perm = SeedPlan(seed).numpy(f"batches:{epoch}").permutation(len(ordered))
    for start in range(0, len(ordered), batch_size):
        yield [ordered[i] for i in perm[start:start + batch_size]]


def batch_positions(n: int, batch_size: int, seed: int, epoch: int,
                    device: torch.device) -> Iterator[torch.Tensor]:
    """:func:`batches` as positions into the sorted IDs, on ``device``: the same order, no per-ID work."""
    perm = torch.as_tensor(SeedPlan(seed).numpy(f"batches:{epoch}").permutation(n), device=device)
    return iter(perm.split(batch_size))


class _DeviceRows:
    """Standardised features and labels of ``ids`` (in that order) on ``device``, built once.

    Building each batch's tensors from its IDs made every step do per-ID dict lookups
    and three host-to-device copies; the values are the same either way."""

    def __init__(self, active: PartyTable, passive: PartyTable, ids: Sequence[str],
                 scale_a: tuple[np.ndarray, np.ndarray], scale_p: tuple[np.ndarray, np.ndarray],
                 device: torch.device) -> None:
        ra, rp = _rows(active, ids), _rows(passive, ids)
        as_t = lambda v: torch.tensor(v, dtype=DTYPE, device=device)  # noqa: E731
        self.tensors = (as_t((active.features[ra] - scale_a[0]) / scale_a[1]),
                        as_t((passive.features[rp] - scale_p[0]) / scale_p[1]),
                        as_t(np.asarray(active.labels)[ra].astype(np.float64)))

    def take(self, rows: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t[rows] for t in self.tensors)


def loss_and_logits(top: nn.Module, z: torch.Tensor,
                    labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Interactive activation, top model, sigmoid + BCE (as BCE with logits)."""
    logits = top(torch.relu(z)).squeeze(1)
    return nn.functional.binary_cross_entropy_with_logits(logits, labels), logits


def _rows(table: PartyTable, ids: Sequence[str]) -> np.ndarray:
    index = {v: i for i, v in enumerate(table.ids)}
    return np.array([index[v] for v in ids], dtype=np.int64)


@dataclass
class _Reference:
    """All parameters of the split NN in one process."""

    bottom_active: nn.Module
    bottom_passive: nn.Module
    w_active: torch.Tensor
    w_passive: torch.Tensor
    bias: torch.Tensor
    top: nn.Module

    def logits(self, xa: torch.Tensor, xp: torch.Tensor,
               y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.bottom_active(xa) @ self.w_active + self.bottom_passive(xp) @ self.w_passive + self.bias
        return loss_and_logits(self.top, z, y)


def _build(config: SplitNNConfig, n_active: int, n_passive: int, device: torch.device) -> _Reference:
    widths = config.widths(n_active, n_passive)
    w_a, w_p, bias = (torch.tensor(v, dtype=DTYPE, device=device, requires_grad=True)
                      for v in interactive_init(widths, config.seed, config.passive_seed, config.share_seed))
    return _Reference(bottom_model(n_active, widths.bottom_active, config.seed, "active", device),
                      bottom_model(n_passive, widths.bottom_passive, config.seed, "passive", device),
                      w_a, w_p, bias, top_model(widths, config.seed, device))


def train_splitnn(split: VerticalSplit, config: SplitNNConfig) -> dict[str, Any]:
    """Train and evaluate the plaintext split NN; returns metrics and the final weights."""
    if len(split.dataset.passive) != 1:
        raise InputError(f"the split NN takes one passive party, got {len(split.dataset.passive)}")
    device, start = resolve_device(config.device), time.perf_counter()
    active, passive = split.dataset.active, split.dataset.passive[0]
    common = set(active.ids) & set(passive.ids)
    train_ids, test_ids = sorted(common & split.train_ids), sorted(common & split.test_ids)
    if not train_ids or not test_ids:
        raise InputError("no training or no test rows are shared by both parties")
    binary_labels(active.labels, owner=f"active party {active.name!r}")  # BCE and the scores need 0/1
    mean_a, std_a = standardizer(active.features[_rows(active, train_ids)])
    mean_p, std_p = standardizer(passive.features)

    train = _DeviceRows(active, passive, train_ids, (mean_a, std_a), (mean_p, std_p), device)
    net = _build(config, active.n_features, passive.n_features, device)
    # foreach on every device: bit-identical updates, less per-step overhead than the CPU default
    adam = torch.optim.Adam([*net.bottom_active.parameters(), *net.top.parameters(),
                             *net.bottom_passive.parameters()], lr=config.lr, foreach=True)
    sgd = torch.optim.SGD([net.w_active, net.w_passive, net.bias], lr=config.interactive_lr, foreach=True)
    for epoch in range(config.epochs):
        for rows in batch_positions(len(train_ids), config.batch_size, config.seed, epoch, device):
            loss, _ = net.logits(*train.take(rows))
            adam.zero_grad()
            sgd.zero_grad()
            loss.backward()
            adam.step()
            sgd.step()
        if config.progress is not None:
            config.progress(epoch + 1, config.epochs)
    with torch.no_grad():
        xa, xp, y = _DeviceRows(active, passive, test_ids, (mean_a, std_a), (mean_p, std_p), device).tensors
        _, logits = net.logits(xa, xp, y)
    scores = torch.sigmoid(logits).cpu().numpy()
    return {"method": "splitnn", "metrics": binary_metrics(y.cpu().numpy(), finite_scores(scores, who="splitnn")),
            "seconds": time.perf_counter() - start, "bytes": 0, "train_rows": len(train_ids),
            "test_rows": len(test_ids), "weights": weights_of(net)}


def weights_of(net: Any) -> dict[str, np.ndarray]:
    """Every layer's parameters as float64 arrays, named as HE-VFL reports them."""
    out = {f"{name}.{k}": v.detach().cpu().numpy()
           for name in ("bottom_active", "bottom_passive", "top")
           for k, v in getattr(net, name).state_dict().items()}
    out.update({"interactive.w_active": net.w_active.detach().cpu().numpy(),
                "interactive.w_passive": net.w_passive.detach().cpu().numpy(),
                "interactive.bias": net.bias.detach().cpu().numpy()})
    return out


def run_splitnn(split: VerticalSplit, config: SplitNNConfig | None = None) -> dict[str, Any]:
    """:func:`train_splitnn` without the weights, in the shape of every result file."""
    config = config or SplitNNConfig()
    result = train_splitnn(split, config)
    result.pop("weights")
    result.update(dataset=split.dataset.name, seed=config.seed, device=config.device,
                  settings=config.settings())
    return result


__all__ = ["DTYPE", "Progress", "SplitNNConfig", "Widths", "active_interactive_init", "active_share", "batch_positions",
           "batches", "bottom_model", "interactive_bound", "interactive_init", "loss_and_logits", "passive_weights",
           "run_splitnn", "share_bound", "standardizer", "top_model", "train_splitnn", "weights_of"]
