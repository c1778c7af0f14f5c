"""TDCD: Tiered Decentralized Coordinate Descent (Das & Patterson, ICASSP 2021), party roles.

N silos each hold a block of every sample's features; inside a silo the rows are dealt
to K clients, each holding its rows' labels (:mod:`securefl.data.tdcd_sets`). The model
is partially separable: the prediction is ``sum_j h_j(X_j; theta_j)``. One round is Q
iterations of Algorithm 1:

1. every hub averages its clients' ``theta`` (through secure aggregation, so a hub sees
   only the sum; plain with ``secure=False``) and returns the average to them;
2. the hubs draw the same Q minibatches (from the run's seed and the round) and tell
   each client which of its rows they hold;
3. each client sends its silo's intermediate information ``Phi = h_j(x)`` for those
   rows to its hub; the hubs exchange their stacked ``Phi_j`` and each returns to its
   clients the others' sum ``Phi_-j`` for their rows (the projection ``pi_kj``);
4. each client takes Q local SGD steps (eq. 1) on its rows of each minibatch, with the
   others' contribution held at its stale value.

No party sends features, labels or weights across silos; hubs see ``Phi`` of the
minibatch rows and their own silo's average, from which a hub can solve for its own
clients' features over enough rounds (see :mod:`securefl.algorithms.tdcd_hub`).
Every ``eval_every`` rounds (and at the end) the federation computes the training
objective with the averaged model the same way, over all training rows (the paper's
curves); at the end the test metrics. Those exchanges travel under ``eval-*`` stages,
so their bytes are reported apart from training's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from protocols.channels import SecAggConfig
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.transport.base import Transport
from securefl.data.tdcd_sets import ClientShard
from securefl.models.silo import ImageSilo, LinearSilo
from securefl.runtime import SeedPlan, resolve_device
from securefl.runtime import validation as check
from securefl.runtime.federated import client_average
from securefl.runtime.threads import intra_op_threads

STAGE = "tdcd"


@dataclass(frozen=True)
class TDCDConfig:
    """Algorithm 1's settings; the paper's convex defaults (Fig. 2a: Q, B = 100, eta = 0.001)."""

    rounds: int = 50
    local_steps: int = 4
    batch_size: int = 100
    lr: float = 1e-3
    l2: float = 0.01
    secure: bool = True
    eval_every: int = 1
    seed: int = 0
    device: str = "cpu"
    threads: int | None = 1
    stage_timeout: float = 600.0
    progress: Callable[[int, int], None] | None = None

    def __post_init__(self) -> None:
        owner = "TDCDConfig"
        for name in ("rounds", "local_steps", "batch_size"):
            check.positive_int(owner, name, getattr(self, name))
        if isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 0:
            raise InputError(f"TDCDConfig.eval_every must be an int >= 0 (0: only at the end), got {self.eval_every!r}")
        check.positive_number(owner, "lr", self.lr)
        check.non_negative_number(owner, "l2", self.l2)
        check.flag(owner, "secure", self.secure)
        check.device(owner, self.device)
        check.positive_int(owner, "threads", self.threads, optional=True)
        check.positive_number(owner, "stage_timeout", self.stage_timeout)
        check.callback(owner, "progress", self.progress)
        check.seed(owner, self.seed)

    def secagg(self, clients: int) -> SecAggConfig:
        """Masked averaging, unless asked for plain or a silo has one client (its average is its model)."""
        return SecAggConfig(secure=self.secure and clients >= 2, stage_timeout=self.stage_timeout)

    def evaluates(self, rnd: int) -> bool:
        """Whether the objective is computed after round ``rnd``'s averaging (always after the last)."""
        return rnd == self.rounds or (self.eval_every > 0 and rnd % self.eval_every == 0)

    def settings(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "local_steps": self.local_steps, "batch_size": self.batch_size,
                "lr": self.lr, "l2": self.l2, "secure": self.secure, "eval_every": self.eval_every,
                "seed": self.seed, "device": self.device, "optimizer": "SGD (eq. 1)"}


def build_silo_model(shard: ClientShard, *, task: str, n_classes: int, seed: int) -> torch.nn.Module:
    """Silo ``shard.silo``'s model, initialised alike in all its clients (from the seed, not the global RNG)."""
    if shard.x_train.ndim == 3:
        generator = SeedPlan(seed).torch(f"tdcd:init:silo{shard.silo}")
        return ImageSilo(shard.x_train.shape[1], shard.x_train.shape[2], n_classes, bias=shard.silo == 0,
                         generator=generator)
    return LinearSilo(shard.x_train.shape[1], 1 if task == "regression" else n_classes)


def row_losses(pred: torch.Tensor, y: torch.Tensor, task: str) -> torch.Tensor:
    """Per-row loss: half the squared error (ridge) or cross-entropy."""
    if task == "regression":
        return 0.5 * (pred.squeeze(-1) - y) ** 2
    return F.cross_entropy(pred, y, reduction="none")


def draw_batches(config: TDCDConfig, rnd: int, n_rows: int, clients: int) -> list[np.ndarray]:
    """The Q minibatches of round ``rnd`` (global row positions), alike at every hub: ``batch_size``
    rows per client on average, drawn without replacement within a minibatch."""
    rng = SeedPlan(config.seed).numpy(f"tdcd:batches:{rnd}")
    size = min(n_rows, config.batch_size * clients)
    return [np.sort(rng.choice(n_rows, size=size, replace=False)) for _ in range(config.local_steps)]


def _squared_norm(params: Sequence[torch.Tensor]) -> torch.Tensor:
    return sum((p.pow(2).sum() for p in params), torch.zeros((), device=params[0].device))


# ---------------------------------------------------------------------------------------------- client


def contribute(transport: Transport, hub: str, phi: np.ndarray, stage: str, rnd: int) -> np.ndarray:
    """Send this client's ``Phi`` rows to its hub; the other silos' sum for the same rows."""
    transport.send(hub, Tag(rnd, stage, "phi"), phi=np.ascontiguousarray(phi, dtype=np.float32))
    others = transport.recv(hub, Tag(rnd, stage, "others"))["phi"]
    if not isinstance(others, np.ndarray) or others.shape != phi.shape or others.dtype != np.float32:
        raise ProtocolError(f"{transport.name!r}, round {rnd}: the others' contribution from {hub!r} does not match"
                            f" its {phi.shape} rows")
    return others


def tdcd_client(transport: Transport, *, hub: str, shard: ClientShard, task: str, n_classes: int, clients: int,
                config: TDCDConfig) -> dict[str, Any]:
    """Client ``shard.name``'s whole run: averaging, Phi exchange and Q local steps per round."""
    device = resolve_device(config.device)
    with intra_op_threads(config.threads):
        model = build_silo_model(shard, task=task, n_classes=n_classes, seed=config.seed).to(device)
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=config.lr, foreach=True)
        x, y = _tensors(shard.x_train, shard.y_train, task, device)
        for rnd in range(config.rounds + 1):
            client_average(transport, server=hub, tensors=params, config=config.secagg(clients), round=rnd)
            if config.evaluates(rnd):
                _client_evaluate(transport, hub, model, x, y, task, "eval-train", rnd, config)
            if rnd < config.rounds:
                _local_round(transport, hub, model, opt, x, y, task, rnd, config)
        x_test, y_test = _tensors(shard.x_test, shard.y_test, task, device)
        _client_evaluate(transport, hub, model, x_test, y_test, task, "eval-test", config.rounds, config)
    return {"client": shard.name, "train_rows": len(shard.y_train), "test_rows": len(shard.y_test),
            "parameters": sum(p.numel() for p in params)}


def _tensors(x: np.ndarray, y: np.ndarray, task: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Features as float32 and labels as float32 targets (regression) or int64 classes, on ``device``."""
    labels = torch.as_tensor(y, dtype=torch.float32 if task == "regression" else torch.int64)
    return torch.as_tensor(x, device=device), labels.to(device)


def _valid_plan(rows: Any, counts: Any, steps: int, n_rows: int) -> bool:
    """Whether a hub's minibatch plan is ``steps`` counts of local row indices below ``n_rows``."""
    return (isinstance(rows, np.ndarray) and isinstance(counts, np.ndarray) and rows.ndim == 1
            and rows.dtype.kind in "iu" and counts.dtype.kind in "iu" and counts.shape == (steps,)
            and int(counts.min()) >= 0 and int(counts.sum()) == rows.size
            and (rows.size == 0 or 0 <= int(rows.min()) <= int(rows.max()) < n_rows))


def _local_round(transport: Transport, hub: str, model: torch.nn.Module, opt: torch.optim.Optimizer,
                 x: torch.Tensor, y: torch.Tensor, task: str, rnd: int, config: TDCDConfig) -> None:
    plan = transport.recv(hub, Tag(rnd, STAGE, "batches"))
    rows, counts = plan["rows"], plan["counts"]
    if not _valid_plan(rows, counts, config.local_steps, len(y)):
        raise ProtocolError(f"{transport.name!r}, round {rnd}: the minibatch plan from {hub!r} is malformed")
    unique, inverse = np.unique(rows, return_inverse=True)
    with torch.no_grad():  # a client holding none of the round's rows still answers, with no rows
        phi = model(x[torch.as_tensor(unique)]).cpu().numpy()
    others = contribute(transport, hub, phi, STAGE, rnd)
    stale = torch.as_tensor(others, device=x.device)
    params = list(model.parameters())
    for batch in np.split(inverse, np.cumsum(counts)[:-1]):
        opt.zero_grad(set_to_none=True)
        loss = 0.5 * config.l2 * _squared_norm(params)
        if batch.size:
            local = torch.as_tensor(unique[batch])
            pred = model(x[local]) + stale[torch.as_tensor(batch)]
            loss = loss + row_losses(pred, y[local], task).mean()
        loss.backward()
        opt.step()


def _client_evaluate(transport: Transport, hub: str, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                     task: str, stage: str, rnd: int, config: TDCDConfig) -> None:
    with torch.no_grad():
        own = model(x)
        pred = own + torch.as_tensor(contribute(transport, hub, own.cpu().numpy(), stage, rnd), device=x.device)
        losses = row_losses(pred, y, task)
        if not bool(torch.isfinite(losses).all()):
            raise InputError(f"{transport.name!r}, round {rnd}: the {stage} loss is not finite (training has likely"
                             " diverged; a lower learning rate may help)")
        correct = int((pred.argmax(dim=1) == y).sum()) if task == "classification" else 0
        squared = float(_squared_norm(list(model.parameters())))
    transport.send(hub, Tag(rnd, stage, "loss"), loss=float(losses.sum()), correct=correct, rows=len(y),
                   sqnorm=squared)


__all__ = ["STAGE", "TDCDConfig", "build_silo_model", "contribute", "draw_batches", "row_losses", "tdcd_client"]
