"""HE-VFL: the encrypted vertical split NN of FATE's heterogeneous NN, as two party roles.

The network, initialisation, batch order and optimisers are those of
:mod:`baselines.splitnn` (so with the same seed the two reach the same weights, up
to fixed-point / CKKS error); only the interactive layer's passive half runs
through the secure two-party protocol of :mod:`protocols.interactive`. One
passive party, as in the STFL paper's FATE baseline.

Flow. Both parties run PSI (ECDH, :mod:`protocols.psi`) on their IDs; the active
party's IDs are its training and test rows, and it never says which is which.
Rows are addressed by their position in the PSI order. For each batch the active
party (which alone decides the order) sends the batch's positions, the passive
party feeds its bottom model and the protocol's forward; the active party adds its
own bottom model and the interactive bias, applies ReLU, the top model, sigmoid and
BCE, and back-propagates dL/dz through the protocol, which returns dL/da to the
passive party. Evaluation runs forward only, on the test rows.

What the passive party learns: the intersection, which positions are trained on
(it has to back-propagate them) and, by elimination, which are not; never labels,
predictions or the active party's features. The active party learns the
interactive layer's output z for each batch, never a.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable

import numpy as np
import torch

from baselines.splitnn import (DTYPE, SplitNNConfig, batches, bottom_model, interactive_init,
                               loss_and_logits, standardizer, top_model)
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.interactive import ActiveInteractive, InteractiveConfig, PassiveInteractive
from protocols.psi import psi_active, psi_passive
from protocols.transport import Transport, run_parties
from securefl.data import PartyTable, VerticalSplit
from securefl.runtime import binary_metrics, resolve_device
from securefl.runtime import validation as check
from securefl.runtime.threads import intra_op_threads

STAGE = "he_vfl"
KINDS = ("train", "eval", "stop")


@dataclass(frozen=True)
class HEVFLConfig(SplitNNConfig):
    """HE-VFL settings: the split NN's (paper defaults) plus the interactive layer's.

    ``he``: "ckks" (packed, fast) or "paillier". See :class:`InteractiveConfig` for
    ``noise_scale``, ``activation_bound``, ``mask_bits``, ``packed``, ``key_bits``,
    ``precision_bits``, ``insecure_small_keys_for_tests`` and ``helper`` (packed CKKS: the
    active party shares its products with a helper process). ``threads``: torch and BLAS
    threads of each party while it runs (None: as is); the default 1 keeps idle library
    threads from spinning on the cores the other party and the helper need. ``max_steps``: stop
    training after that many steps (for timing runs; the result then reports the
    steps done and ``projected_training_s`` for all of them). ``max_eval_batches``:
    likewise score only that many test batches (metrics then cover those rows only;
    ``projected_inference_s`` scales the time to the whole test set).
    """

    he: str = "ckks"
    noise_scale: float = 1.0
    activation_bound: float = 64.0
    mask_bits: int = 16
    packed: bool = True
    key_bits: int = 2048
    precision_bits: int = 32
    insecure_small_keys_for_tests: bool = False
    workers: int | None = None
    helper: bool = True
    threads: int | None = 1
    max_steps: int | None = None
    max_eval_batches: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.interactive_config()  # validates the HE settings
        check.positive_int(type(self).__name__, "threads", self.threads, optional=True)
        for name in ("max_steps", "max_eval_batches"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"HEVFLConfig.{name} must be a positive int or None, got {value!r}")

    def interactive_config(self) -> InteractiveConfig:
        return InteractiveConfig(
            he=self.he, lr=self.interactive_lr, noise_scale=self.noise_scale,
            activation_bound=self.activation_bound, packed=self.packed, mask_bits=self.mask_bits,
            key_bits=self.key_bits, precision_bits=self.precision_bits,
            insecure_small_keys_for_tests=self.insecure_small_keys_for_tests, workers=self.workers,
            helper=self.helper)

    def plain(self) -> SplitNNConfig:
        """The split-NN settings this run must match."""
        return SplitNNConfig(**{f.name: getattr(self, f.name) for f in fields(SplitNNConfig)})

    def total_steps(self, train_rows: int) -> int:
        """Training steps of the full schedule (epochs x batches)."""
        return self.epochs * -(-train_rows // self.batch_size)


def _standardized(table: PartyTable, rows: np.ndarray, fit_rows: np.ndarray) -> np.ndarray:
    mean, std = standardizer(table.features[fit_rows])
    return (table.features[rows] - mean) / std


def _tensor(values: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.tensor(values, dtype=DTYPE, device=device)


@dataclass
class _ActiveModel:
    bottom: torch.nn.Module
    w_active: torch.Tensor
    bias: torch.Tensor
    top: torch.nn.Module
    layer: ActiveInteractive

    def forward(self, xa: torch.Tensor, step: int, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """z (pre-activation) and the leaf z_p that receives dL/dz."""
        z_p = _tensor(self.layer.forward(step=step, rows=xa.shape[0], train=train), xa.device)
        z_p.requires_grad_(train)
        return self.bottom(xa) @ self.w_active + z_p + self.bias, z_p


def _active_model(transport: Transport, passive: str, n_features: int, config: HEVFLConfig,
                  device: torch.device) -> _ActiveModel:
    n_out = config.active_widths(n_features, 1).interactive
    layer = ActiveInteractive(transport, passive=passive, n_out=n_out, config=config.interactive_config())
    held: dict[str, Any] = {}

    def init(bottom_passive: int) -> np.ndarray:
        held["widths"] = config.active_widths(n_features, bottom_passive)
        held["w_active"], w_passive, held["bias"] = interactive_init(held["widths"], config.seed)
        return w_passive

    layer.setup(init)
    widths = held["widths"]
    return _ActiveModel(bottom_model(n_features, widths.bottom_active, config.seed, "active", device),
                        _tensor(held["w_active"], device).requires_grad_(True),
                        _tensor(held["bias"], device).requires_grad_(True),
                        top_model(widths, config.seed, device), layer)


def _limited_threads(role: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Run a party role with ``config.threads`` torch and BLAS threads (see HEVFLConfig)."""
    @functools.wraps(role)
    def run(transport: Transport, **kwargs: Any) -> dict[str, Any]:
        config = kwargs.get("config")
        with intra_op_threads(config.threads if isinstance(config, HEVFLConfig) else None):
            return role(transport, **kwargs)
    return run


def _check_active_inputs(passive: Any, table: PartyTable, config: Any) -> None:
    if not isinstance(config, HEVFLConfig):
        raise InputError(f"config must be an HEVFLConfig, got {type(config).__name__}")
    if not isinstance(passive, str):
        raise InputError("HE-VFL runs with exactly one passive party: pass its name as a str, got "
                         f"{passive!r}")
    if table.labels is None:
        raise InputError(f"the active party's table {table.name!r} has no labels")


@dataclass
class _ActiveRun:
    """The active party's state during training: its rows in PSI order and its model."""

    transport: Transport
    passive: str
    config: HEVFLConfig
    model: _ActiveModel
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
        adam = torch.optim.Adam([*model.bottom.parameters(), *model.top.parameters()], lr=config.lr)
        sgd = torch.optim.SGD([model.w_active, model.bias], lr=config.interactive_lr)
        steps, start = 0, time.perf_counter()
        for epoch in range(config.epochs):
            for ids in batches(train, config.batch_size, config.seed, epoch):
                if config.max_steps is not None and steps >= config.max_steps:
                    return epoch, steps
                pos = self.send_batch("train", ids)
                z, z_p = model.forward(_tensor(self.x[pos], self.device), self.step, True)
                loss, _ = loss_and_logits(model.top, z, _tensor(self.y[pos], self.device))
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
                z, _ = self.model.forward(_tensor(self.x[pos], self.device), self.step, False)
                _, logits = loss_and_logits(self.model.top, z, _tensor(self.y[pos], self.device))
                scores.append(torch.sigmoid(logits).cpu().numpy())
        self.send_batch("stop", [])
        return np.concatenate(scores)


@_limited_threads
def he_vfl_active(transport: Transport, *, passive: str, table: PartyTable,
                  train_ids: Iterable[str], test_ids: Iterable[str], config: HEVFLConfig,
                  return_weights: bool = False) -> dict[str, Any]:
    """The active party (labels): PSI, training through the secure layer, evaluation.

    ``return_weights`` adds this party's final parameters (W~, not W, for the
    interactive layer's passive half) to the result, for tests.
    """
    _check_active_inputs(passive, table, config)
    device, phases, start = resolve_device(config.device), {}, time.perf_counter()
    psi = psi_active(transport, passive=[passive], ids=list(table.ids))
    phases["psi"] = time.perf_counter() - start
    position = {v: p for p, v in enumerate(psi.ids)}
    train, test = sorted(position.keys() & set(train_ids)), sorted(position.keys() & set(test_ids))
    if not train or not test:
        raise InputError(f"the intersection ({psi.size} rows) holds {len(train)} training and "
                         f"{len(test)} test rows; both must be non-empty")
    rows = np.asarray(psi.indices)
    x = _standardized(table, rows, rows[[position[v] for v in train]])
    y = np.asarray(table.labels)[rows].astype(np.float64)
    mark = time.perf_counter()
    model = _active_model(transport, passive, table.n_features, config, device)
    try:
        run = _ActiveRun(transport, passive, config, model, position, x, y, device)
        phases["setup"], mark = time.perf_counter() - mark, time.perf_counter()
        epochs, steps = run.train(train)
        phases["training"], mark = time.perf_counter() - mark, time.perf_counter()
        scores = run.predict(test)
        phases["inference"] = time.perf_counter() - mark
    finally:
        model.layer.close()
    scored = test[:len(scores)]
    result = {"method": "he-vfl", "he": config.he,
              "metrics": binary_metrics(y[[position[v] for v in scored]], scores),
              "phases": phases, "seconds": time.perf_counter() - start, "intersection_size": psi.size,
              **_schedule_fields(run, phases, epochs, steps, len(train), len(test), len(scored))}
    if return_weights:
        result["weights"] = _active_weights(model)
    return result


def _schedule_fields(run: _ActiveRun, phases: dict[str, float], epochs: int, steps: int,
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


def _active_weights(model: _ActiveModel) -> dict[str, np.ndarray]:
    out = {f"bottom_active.{k}": v.detach().cpu().numpy() for k, v in model.bottom.state_dict().items()}
    out.update({f"top.{k}": v.detach().cpu().numpy() for k, v in model.top.state_dict().items()})
    out.update({"interactive.w_active": model.w_active.detach().cpu().numpy(),
                "interactive.bias": model.bias.detach().cpu().numpy(),
                "interactive.masked_w_passive": model.layer.weight.copy()})
    return out


def _positions(message: Any, size: int) -> tuple[str, np.ndarray]:
    kind, rows = message["kind"], message["rows"]
    if kind not in KINDS:
        raise ProtocolError(f"unknown batch kind {kind!r}")
    if not isinstance(rows, np.ndarray) or rows.ndim != 1 or rows.dtype.kind not in "iu" \
            or (rows.size and (rows.min() < 0 or rows.max() >= size)) \
            or (kind != "stop" and rows.size == 0):
        raise ProtocolError(f"malformed batch positions for {size} intersection rows")
    return kind, rows.astype(np.int64)


@_limited_threads
def he_vfl_passive(transport: Transport, *, active: str, table: PartyTable, config: HEVFLConfig,
                   return_weights: bool = False) -> dict[str, Any]:
    """The passive party (features only): PSI, then whatever batches the active party asks for."""
    if not isinstance(config, HEVFLConfig):
        raise InputError(f"config must be an HEVFLConfig, got {type(config).__name__}")
    device, start = resolve_device(config.device), time.perf_counter()
    psi = psi_passive(transport, active=active, ids=list(table.ids))
    x = _standardized(table, np.asarray(psi.indices), np.arange(table.n_rows))
    width = config.passive_width(table.n_features)
    bottom = bottom_model(table.n_features, width, config.seed, "passive", device)
    adam = torch.optim.Adam(bottom.parameters(), lr=config.lr)
    layer = PassiveInteractive(transport, active=active, n_in=width, config=config.interactive_config())
    layer.setup()
    step, trained = 0, 0
    while True:
        step += 1
        kind, rows = _positions(transport.recv(active, Tag(step, STAGE, "batch")), psi.size)
        if kind == "stop":
            break
        train = kind == "train"
        with torch.set_grad_enabled(train):
            a = bottom(_tensor(x[rows], device))
        layer.forward(a.detach().cpu().numpy(), step=step, train=train)
        if train:
            da = layer.backward(step=step)
            adam.zero_grad()
            a.backward(_tensor(da, device))
            adam.step()
            trained += 1
    result = {"intersection_size": psi.size, "steps": trained, "seconds": time.perf_counter() - start}
    if return_weights:
        result["weights"] = {f"bottom_passive.{k}": v.detach().cpu().numpy()
                             for k, v in bottom.state_dict().items()}
        result["weights"]["interactive.noise"] = layer.noise.copy()
    return result


def run_he_vfl(split: VerticalSplit, config: HEVFLConfig | None = None, *,
               backend: str = "inprocess") -> dict[str, Any]:
    """Run both roles on a split (one passive party) and return the result-file fields."""
    config = config or HEVFLConfig()
    if len(split.dataset.passive) != 1:
        raise InputError(f"HE-VFL takes exactly one passive party; dataset {split.dataset.name!r} has "
                         f"{len(split.dataset.passive)}")
    active, passive = split.dataset.active, split.dataset.passive[0]
    quiet = replace(config, progress=None)  # a callback cannot cross into another process
    run = run_parties(
        {active.name: he_vfl_active, passive.name: he_vfl_passive}, backend=backend,
        kwargs={active.name: {"passive": passive.name, "table": active, "train_ids": split.train_ids,
                              "test_ids": split.test_ids,
                              "config": config if backend == "inprocess" else quiet},
                passive.name: {"active": active.name, "table": passive, "config": quiet}})
    result = dict(run.results[active.name])
    result.update(dataset=split.dataset.name, seed=config.seed, device=config.device,
                  seconds=run.seconds, bytes=run.bytes,
                  bytes_per_party={name: comm["bytes_sent"] for name, comm in run.comm.items()},
                  bytes_per_tag={name: comm["per_tag"] for name, comm in run.comm.items()},
                  settings=config.settings())
    return result


__all__ = ["HEVFLConfig", "STAGE", "he_vfl_active", "he_vfl_passive", "project_training", "run_he_vfl"]
