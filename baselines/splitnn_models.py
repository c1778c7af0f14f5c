"""The split NN's layers and their initialisation, shared by the plaintext reference and HE-VFL.

Every layer is PyTorch's default Linear initialisation drawn from a named seed stream
(:class:`~securefl.runtime.SeedPlan`), so the reference and HE-VFL start from the same
weights. The passive half of the interactive layer is the sum of two shares, one per
party, each drawn from the OS unless a seed is given (:func:`interactive_init`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from protocols.randomness import os_uniform
from securefl.runtime import SeedPlan

DTYPE = torch.float64


@dataclass(frozen=True)
class Widths:
    """Layer widths: each bottom model's output, the interactive layer, the top hidden layer."""

    bottom_active: int
    bottom_passive: int
    interactive: int
    top: int


def _init_linear(layer: nn.Linear, gen: torch.Generator) -> nn.Linear:
    """PyTorch's default Linear initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), seeded."""
    bound = 1.0 / math.sqrt(layer.in_features)
    with torch.no_grad():
        layer.weight.copy_(torch.rand(layer.weight.shape, generator=gen, dtype=DTYPE) * 2 * bound - bound)
        layer.bias.copy_(torch.rand(layer.bias.shape, generator=gen, dtype=DTYPE) * 2 * bound - bound)
    return layer


def bottom_model(n_in: int, width: int, seed: int, party: str, device: torch.device) -> nn.Module:
    """One party's bottom model, Linear + ReLU, initialised from ``init:bottom_<party>``."""
    layer = _init_linear(nn.Linear(n_in, width, dtype=DTYPE), SeedPlan(seed).torch(f"init:bottom_{party}"))
    return nn.Sequential(layer, nn.ReLU()).to(device)


def top_model(widths: Widths, seed: int, device: torch.device) -> nn.Module:
    """The active party's top model: Linear + ReLU + Linear to one logit."""
    gen = SeedPlan(seed).torch("init:top")
    first = _init_linear(nn.Linear(widths.interactive, widths.top, dtype=DTYPE), gen)
    last = _init_linear(nn.Linear(widths.top, 1, dtype=DTYPE), gen)
    return nn.Sequential(first, nn.ReLU(), last).to(device)


def interactive_bound(widths: Widths) -> float:
    """The interactive layer's initialisation bound, 1/sqrt(fan_in), as one Linear over [a_active, a_passive]."""
    return 1.0 / math.sqrt(widths.bottom_active + widths.bottom_passive)


def share_bound(widths: Widths) -> float:
    """The bound of each of the two shares whose sum is the passive half of the initial interactive
    weights: interactive_bound / sqrt(2), so that the sum has the variance of one U(+-interactive_bound)."""
    return interactive_bound(widths) / math.sqrt(2.0)


def interactive_init(widths: Widths, seed: int, passive_seed: int | None = None, share_seed: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W_active, W_passive, bias) of the interactive layer, as one Linear over [a_active, a_passive].

    W_passive is the sum of the passive party's share (:func:`passive_weights`, from
    ``passive_seed``) and the active party's (:func:`active_share`, from ``share_seed``),
    each from ``seed`` when None, as HE-VFL's two parties draw them (neither knows the sum);
    the rest is the active party's, from ``init:interactive``.
    """
    w_active, bias = active_interactive_init(widths, seed)
    shape, bound = (widths.bottom_passive, widths.interactive), share_bound(widths)
    w_passive = (passive_weights(shape, bound, seed if passive_seed is None else passive_seed)
                 + active_share(shape, bound, seed if share_seed is None else share_seed))
    return w_active, w_passive, bias


def active_interactive_init(widths: Widths, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(W_active, bias): the active party's part of the interactive Linear, from ``init:interactive``."""
    fan_in = widths.bottom_active + widths.bottom_passive
    layer = _init_linear(nn.Linear(fan_in, widths.interactive, dtype=DTYPE),
                         SeedPlan(seed).torch("init:interactive"))
    return layer.weight.detach().numpy().T[:widths.bottom_active].copy(), layer.bias.detach().numpy().copy()


def _uniform(shape: tuple[int, int], bound: float, seed: int | None, stream: str) -> np.ndarray:
    """U(-bound, bound): straight from the OS when ``seed`` is None (not from a generator the OS
    seeds: 64 seed bits would let a peer holding one equation in the share search for it), so
    that nobody who knows the run's other seeds can recompute it; else repeatable from ``stream``."""
    if seed is None:
        return os_uniform(bound, shape)
    gen = SeedPlan(seed).torch(stream)
    return (torch.rand(shape, generator=gen, dtype=DTYPE) * 2 * bound - bound).numpy()


def active_share(shape: tuple[int, int], bound: float, seed: int | None) -> np.ndarray:
    """The active party's share of the passive half of the initial interactive weights, U(-bound,
    bound): from the OS when ``seed`` is None (HE-VFL's default: the passive party must not know it)."""
    return _uniform(shape, bound, seed, "init:interactive:share")


def passive_weights(shape: tuple[int, int], bound: float, seed: int | None) -> np.ndarray:
    """The passive party's share of the initial interactive weights, U(-bound, bound).

    ``seed`` None draws them from the OS (:func:`_uniform`), so that nobody who knows the
    run's other seeds can recompute them (HE-VFL's default: the active party must not
    hold them); an int repeats them (tests, and the plaintext split NN's reference).
    """
    return _uniform(shape, bound, seed, "init:interactive:passive")


__all__ = ["DTYPE", "Widths", "active_interactive_init", "active_share", "bottom_model", "interactive_bound",
           "interactive_init", "passive_weights", "share_bound", "top_model"]
