"""Multilayer perceptrons of the STFL paper's shape, initialised from a learning seed.

Every network here is Linear -> ReLU -> Linear with the hidden width given by the
caller (the paper uses 5 x the input features). Classifiers end in one *logit*:
the sigmoid of the paper's output layer is folded into the loss
(``binary_cross_entropy_with_logits``, the numerically stable form of sigmoid + BCE)
and applied again at prediction time, so the model is the paper's MLP.

Weights are drawn from a ``torch.Generator`` (from :class:`~securefl.runtime.SeedPlan`),
never from torch's global RNG, so runs are reproducible and no seeding happens at
import time.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from protocols.errors import InputError


def hidden_width(n_inputs: int, multiplier: int) -> int:
    """The paper's hidden width: ``multiplier`` (5) times the number of inputs."""
    return int(multiplier) * int(n_inputs)


def latent_width(n_inputs: int) -> int:
    """The paper's latent size: half the input features, at least one."""
    return max(1, int(n_inputs) // 2)


def init_linear_(layer: nn.Linear | nn.Conv2d, generator: torch.Generator) -> None:
    """torch's default Linear (and Conv2d) initialisation (Kaiming-uniform, bias uniform in
    +-1/sqrt(fan_in)), drawn from ``generator``."""
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
    if layer.bias is not None:
        fan_in = layer.weight[0].numel()  # in_features for a Linear layer
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


def seeded_(module: nn.Module, generator: torch.Generator | None) -> nn.Module:
    """Re-initialise every Linear and Conv2d layer of ``module`` from ``generator`` (in module order)."""
    if generator is not None:
        with torch.no_grad():
            for layer in module.modules():
                if isinstance(layer, (nn.Linear, nn.Conv2d)):
                    init_linear_(layer, generator)
    return module


def check_width(value: int, what: str) -> int:
    """``value``, or InputError naming ``what`` unless it is a positive int (a layer width)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{what} must be a positive int, got {value!r}")
    return value


def mlp(n_inputs: int, hidden: int, n_outputs: int = 1, *,
        generator: torch.Generator | None = None) -> nn.Sequential:
    """Linear(n_inputs, hidden) -> ReLU -> Linear(hidden, n_outputs).

    Used as the active party's classifier (one logit), the centralized baseline and
    the hierarchical baseline's passive encoders (``n_outputs`` = latent width).
    """
    check_width(n_inputs, "n_inputs")
    check_width(hidden, "hidden")
    check_width(n_outputs, "n_outputs")
    net = nn.Sequential(nn.Linear(n_inputs, hidden), nn.ReLU(), nn.Linear(hidden, n_outputs))
    return seeded_(net, generator)  # type: ignore[return-value]


class HierarchicalMLP(nn.Module):
    """STFL's structure as one network: per-passive encoders feeding the active party's MLP.

    The input is one matrix ``[active features | passive 1 | passive 2 | ...]``;
    column blocks of the passive parties go through their own encoder
    (n_k -> multiplier*n_k -> max(1, n_k // 2), the VAE encoder's mean path) and the
    active party's MLP sees ``[active features, every encoding]``. Trained end to end,
    this is the paper's "Hierarchical" baseline.
    """

    def __init__(self, active_features: int, passive_features: Sequence[int], *, multiplier: int,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        check_width(active_features, "active_features")
        if not passive_features:
            raise InputError("HierarchicalMLP needs at least one passive party")
        self.active_features = active_features
        self.blocks: list[tuple[int, int]] = []
        start = active_features
        for n in passive_features:
            check_width(n, "passive features")
            self.blocks.append((start, start + n))
            start += n
        self.n_inputs = start
        self.encoders = nn.ModuleList(
            mlp(n, hidden_width(n, multiplier), latent_width(n), generator=generator)
            for n in passive_features)
        head_inputs = active_features + sum(latent_width(n) for n in passive_features)
        self.head = mlp(head_inputs, hidden_width(head_inputs, multiplier), 1, generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x[:, :self.active_features]]
        parts += [enc(x[:, a:b]) for enc, (a, b) in zip(self.encoders, self.blocks)]
        return self.head(torch.cat(parts, dim=1))


__all__ = ["HierarchicalMLP", "check_width", "hidden_width", "init_linear_", "latent_width", "mlp", "seeded_"]
