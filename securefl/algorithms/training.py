"""One lean training loop shared by STFL, its VAE pretraining and the plaintext baselines.

Data live as pre-built tensors on the run's device; each epoch draws one
permutation from a seeded ``torch.Generator`` and slices index batches out of it,
so there is no DataLoader, no per-step host copy and no per-step device sync (the
epoch losses are collected on the device and read once at the end).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from protocols.errors import InputError
from securefl.models.scaling import Standardizer
from securefl.models.vae import VAE
from securefl.runtime import SeedPlan, binary_metrics, finite_scores, resolve_device
from securefl.runtime import validation as check
from securefl.runtime.threads import intra_op_threads

Progress = Callable[[int, int], None]


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Supervised training settings (paper, section V: Adam, lr 1e-3, batch 128, 100 epochs).

    ``progress`` (optional) is called as ``progress(epoch, total)`` after each
    supervised training epoch, e.g. to drive a CLI progress bar; it is a local
    callback and never crosses a process boundary.

    ``threads`` is torch's intra-op thread count while a party trains (restored
    afterwards); ``None`` leaves torch's setting alone. The default is 1: these
    networks are tiny (hidden width 5 n, batches of 128), so extra threads only add
    synchronisation, and each party already trains in its own thread or process
    (on 2 shared cores, 2 threads made the VAE loop about 5x slower than 1).

    ``cuda_graphs`` (on by default; used on a CUDA device only, elsewhere it changes
    nothing) replays each training step as a CUDA graph, which removes the per-kernel
    launch cost that dominates these tiny steps (:mod:`securefl.algorithms.graphed`;
    its status says what it costs). ``settings()`` records whether graphs were used.
    """

    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-3
    hidden_multiplier: int = 5
    seed: int = 0
    device: str = "cpu"
    threads: int | None = 1
    cuda_graphs: bool = True
    progress: Progress | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("epochs", "batch_size", "hidden_multiplier"):
            check.positive_int(owner, name, getattr(self, name))
        check.positive_number(owner, "lr", self.lr)
        check.seed(owner, self.seed)
        check.device(owner, self.device)
        check.positive_int(owner, "threads", self.threads, optional=True)
        check.flag(owner, "cuda_graphs", self.cuda_graphs)
        check.callback(owner, "progress", self.progress)

    def settings(self) -> dict[str, Any]:
        """The JSON-ready settings (everything but the progress callback); ``cuda_graphs``
        says whether graphs were used, so it is false off a CUDA device."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "progress"}
        out["cuda_graphs"] = self.cuda_graphs and self.device.startswith("cuda")
        return out


def device_generator(plan: SeedPlan, purpose: str, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded for ``purpose`` (batch order, VAE noise)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(plan.derive(purpose))
    return gen


def as_tensor(x: np.ndarray, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``x`` as a contiguous tensor on ``device`` (one copy, made once before training)."""
    return torch.as_tensor(np.ascontiguousarray(x), dtype=dtype).to(device)


def fit(model: nn.Module, loss_fn: Callable[..., torch.Tensor], tensors: tuple[torch.Tensor, ...], *,
        epochs: int, batch_size: int, lr: float, generator: torch.Generator,
        progress: Progress | None = None, threads: int | None = None, noise_width: int = 0,
        cuda_graphs: bool = False) -> list[float]:
    """Adam on ``loss_fn(*batch)`` over shuffled index batches; the mean loss per epoch.

    With ``noise_width``, ``loss_fn`` also gets a standard normal ``(batch, noise_width)``
    tensor drawn from ``generator`` after the batch's order (the VAE's reparameterisation
    noise). With ``cuda_graphs`` on a CUDA device each step is a graph replay
    (:mod:`securefl.algorithms.graphed`); elsewhere the flag changes nothing.
    """
    n = int(tensors[0].shape[0])
    if n == 0:
        raise InputError("cannot train on zero rows")
    model.train()
    device = tensors[0].device
    with intra_op_threads(threads):
        if cuda_graphs and device.type == "cuda":
            step = _graphed_step(model, loss_fn, tensors, lr=lr, batch_size=batch_size, generator=generator,
                                 noise_width=noise_width)
        else:
            step = _eager_step(model, loss_fn, tensors, lr=lr, generator=generator, noise_width=noise_width)
        losses = torch.zeros(epochs, device=device)
        for epoch in range(epochs):
            order = torch.randperm(n, generator=generator, device=generator.device)
            for rows in order.split(batch_size):
                losses[epoch] += step(rows) * len(rows)
            if progress is not None:
                progress(epoch + 1, epochs)
    model.eval()
    return [v / n for v in losses.tolist()]


Step = Callable[[torch.Tensor], torch.Tensor]


def _eager_step(model: nn.Module, loss_fn: Callable[..., torch.Tensor], tensors: tuple[torch.Tensor, ...], *,
                lr: float, generator: torch.Generator, noise_width: int) -> Step:
    """One optimizer step on the rows at the given positions; returns the batch's loss, detached.

    Adam runs its multi-tensor (foreach) form on every device: on the CPU torch would pick the
    per-tensor loop, whose Python overhead made a VAE step here 1.3x slower, with bit-identical
    updates (checked on a classifier and a VAE)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)

    def step(rows: torch.Tensor) -> torch.Tensor:
        batch = [t[rows] for t in tensors]
        if noise_width:
            batch.append(torch.randn((len(rows), noise_width), generator=generator, device=generator.device))
        loss = loss_fn(*batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def _graphed_step(model: nn.Module, loss_fn: Callable[..., torch.Tensor], tensors: tuple[torch.Tensor, ...], *,
                  lr: float, batch_size: int, generator: torch.Generator, noise_width: int) -> Step:
    from securefl.algorithms.graphed import GraphedSteps

    return GraphedSteps(model, loss_fn, tensors, lr=lr, batch_size=batch_size, generator=generator,
                        noise_width=noise_width).step


def fit_classifier(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, config: TrainConfig,
                   generator: torch.Generator, progress: Progress | None = None) -> list[float]:
    """Train a one-logit classifier with binary cross-entropy (sigmoid folded into the loss)."""
    def loss_fn(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)

    return fit(model, loss_fn, (x, y), epochs=config.epochs, batch_size=config.batch_size, lr=config.lr,
               generator=generator, progress=progress, threads=config.threads, cuda_graphs=config.cuda_graphs)


def fit_vae(vae: VAE, x: torch.Tensor, *, epochs: int, config: TrainConfig,
            generator: torch.Generator) -> list[float]:
    """Pretrain ``vae`` on ``x`` with eq. 5; the reparameterisation noise comes from ``generator``.
    ``config.progress``, if any, is called after each epoch."""
    return fit(vae, lambda xb, noise: vae.loss(xb, noise=noise), (x,), epochs=epochs, noise_width=vae.latent,
               batch_size=config.batch_size, lr=config.lr, generator=generator, progress=config.progress,
               threads=config.threads, cuda_graphs=config.cuda_graphs)


def predict_scores(model: nn.Module, x: torch.Tensor) -> np.ndarray:
    """Sigmoid scores of a one-logit classifier, as a float64 numpy vector."""
    model.eval()
    with torch.inference_mode():
        return torch.sigmoid(model(x).squeeze(1)).double().cpu().numpy()


def train_and_evaluate(model: nn.Module, x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, *,
                       config: TrainConfig, purpose: str
                       ) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """Standardise with the training rows' statistics, train ``model`` on them, score the test rows.

    ``train`` and ``test`` are boolean row masks. Returns (metrics, phase seconds
    for "training" and "inference", per-epoch training losses). Batch order comes
    from the seed's ``{purpose}/batches`` stream.
    """
    device = resolve_device(config.device)
    scaler = Standardizer.fit(x[train])
    model = model.to(device)
    start = time.perf_counter()
    history = fit_classifier(model, as_tensor(scaler.transform(x[train]), device),
                             as_tensor(y[train], device), config=config, progress=config.progress,
                             generator=device_generator(SeedPlan(config.seed), f"{purpose}/batches", device))
    trained = time.perf_counter()
    with intra_op_threads(config.threads):
        scores = predict_scores(model, as_tensor(scaler.transform(x[test]), device))
    metrics = binary_metrics(y[test], finite_scores(scores, who=purpose))
    return metrics, {"training": trained - start, "inference": time.perf_counter() - trained}, history


def binary_labels(labels: np.ndarray, *, owner: str) -> np.ndarray:
    """``labels`` as float32 0/1, or InputError naming ``owner`` if they are not binary."""
    labels = np.asarray(labels)
    values = set(np.unique(labels).tolist())
    if not values <= {0, 1}:
        raise InputError(f"{owner}: binary classification needs labels 0/1, got values {sorted(values)[:5]}")
    return labels.astype(np.float32)


@dataclass
class MethodResult:
    """The result object every vertical method returns (DESIGN.md, "Results")."""

    method: str
    dataset: str
    seed: int
    device: str
    metrics: dict[str, float]
    seconds: float
    bytes: int
    phases: dict[str, float]
    bytes_per_party: dict[str, int]
    settings: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {**out.pop("extra"), **out}


__all__ = ["MethodResult", "Progress", "TrainConfig", "as_tensor", "binary_labels", "device_generator",
           "fit", "fit_classifier", "fit_vae", "intra_op_threads", "predict_scores",
           "train_and_evaluate"]
