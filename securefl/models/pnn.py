"""CHFL's two-column progressive network (Mori et al., eq. 6-7) and the plain MLPs of its baselines.

A client's network has a *common column* (an MLP on the common features, the only
part that is federated) and a *unique column* (an MLP on the client's unique
features) whose hidden layers also receive the common column's previous layer
through lateral matrices ``U`` scaled by a fixed ``mu`` (eq. 6)::

    z_u(i+1) = a(W_u(i+1) z_u(i) + b_u(i+1) + mu * U(i+1) z_c(i)),   i + 1 = 2..L

The output is ``softmax(z_c(L) + z_u(L))`` (eq. 7); here both columns return
*logits* and the softmax is folded into the cross-entropy loss. ``a`` is ReLU
and the last layer (L) is linear.

:class:`UniqueColumns` holds G unique columns side by side (stacked weights, one
batched matmul per layer), one per ``mu``: the common column is trained on its own
loss (Algorithm 2, line 14) and is never influenced by a unique column, so several
unique columns with different ``mu`` can be trained against the same common column
in one federated run. Their parameters are disjoint and Adam is element-wise, so
summing their losses trains each exactly as if alone.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from protocols.errors import InputError
from securefl.models.mlp import seeded_

PAPER_HIDDEN = (512, 256, 128)
"""Hidden widths of every column and baseline network in the paper (section V-A2)."""


def _check_sizes(n_inputs: int, hidden: Sequence[int], n_classes: int) -> tuple[int, ...]:
    for name, value in (("n_inputs", n_inputs), ("n_classes", n_classes), *(("hidden", h) for h in hidden)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive int, got {value!r}")
    if not hidden:
        raise InputError("hidden must name at least one hidden layer width")
    return (n_inputs, *hidden, n_classes)


class Column(nn.Module):
    """An MLP ``n_inputs -> hidden... -> n_classes`` (ReLU, linear output) that exposes every layer's output."""

    def __init__(self, n_inputs: int, hidden: Sequence[int], n_classes: int, *,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        sizes = _check_sizes(n_inputs, hidden, n_classes)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        seeded_(self, generator)

    def activations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``[z(1), ..., z(L)]``: each hidden layer after ReLU, then the output logits."""
        outs = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
            outs.append(x)
        return outs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activations(x)[-1]


def _uniform(shape: tuple[int, ...], fan_in: int, generator: torch.Generator | None) -> torch.Tensor:
    """Values drawn like torch's default Linear init, U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    return torch.empty(shape).uniform_(-bound, bound, generator=generator)


class UniqueColumns(nn.Module):
    """G unique columns with lateral matrices, one per entry of ``mus`` (eq. 6), stacked for speed.

    ``forward(x_u, common)`` takes the unique features ``[B, n_unique]`` and the common
    column's activations (:meth:`Column.activations`, already detached by the caller
    when the common column is fixed) and returns the unique logits ``z_u(L)`` as
    ``[G, B, n_classes]``.
    """

    def __init__(self, n_unique: int, hidden: Sequence[int], n_classes: int, *, mus: Sequence[float],
                 generator: torch.Generator | None = None,
                 generators: Sequence[torch.Generator] | None = None) -> None:
        """``generator`` draws every column's initial weights in turn; ``generators`` (one per
        mu) draws each column from its own, so a column starts the same whatever other mus
        stand beside it."""
        super().__init__()
        sizes = _check_sizes(n_unique, hidden, n_classes)
        mus = tuple(float(m) for m in mus)
        if not mus or any(not (0.0 <= m <= 1.0) for m in mus):
            raise InputError(f"mus must be a non-empty list of values in [0, 1], got {list(mus)}")
        if generators is not None and (generator is not None or len(generators) != len(mus)):
            raise InputError(f"pass generator or generators (one generator per mu, {len(mus)} here), not both;"
                             f" got {0 if generators is None else len(generators)} generators")
        self.mus = mus
        g = len(mus)
        self.register_buffer("mu", torch.tensor(mus, dtype=torch.float32).reshape(g, 1, 1))
        # U(i+1) maps the common column's layer i (width sizes[i]) to layer i+1, i + 1 = 2..L
        shapes = {"weights": [((a, b), a) for a, b in zip(sizes[:-1], sizes[1:])],
                  "biases": [((1, b), a) for a, b in zip(sizes[:-1], sizes[1:])],
                  "laterals": [((a, b), a) for a, b in zip(sizes[1:-1], sizes[2:])]}
        columns = [{k: [_uniform(shape, fan_in, gen) for shape, fan_in in v] for k, v in shapes.items()}
                   for gen in (generators if generators is not None else [generator] * g)]
        drawn = {k: [torch.stack(parts) for parts in zip(*(c[k] for c in columns))] for k in shapes}
        self.weights = nn.ParameterList(nn.Parameter(t) for t in drawn["weights"])
        self.biases = nn.ParameterList(nn.Parameter(t) for t in drawn["biases"])
        self.laterals = nn.ParameterList(nn.Parameter(t) for t in drawn["laterals"])

    def forward(self, x_u: torch.Tensor, common: Sequence[torch.Tensor]) -> torch.Tensor:
        z = x_u.unsqueeze(0).expand(len(self.mus), *x_u.shape)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            pre = torch.bmm(z, w) + b
            if i > 0:
                pre = pre + self.mu * torch.matmul(common[i - 1], self.laterals[i - 1])
            z = pre if i == last else torch.relu(pre)
        return z


class CHFLNet(nn.Module):
    """One client's whole CHFL model: the common column plus G unique columns (one per mu).

    ``forward(x_c, x_u)`` returns the combined logits ``z_c(L) + z_u(L)`` as
    ``[G, B, n_classes]``; softmax of these is eq. 7.
    """

    def __init__(self, n_common: int, n_unique: int, n_classes: int, *, hidden: Sequence[int] = PAPER_HIDDEN,
                 mus: Sequence[float] = (0.0,), generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.common = Column(n_common, hidden, n_classes, generator=generator)
        self.unique = UniqueColumns(n_unique, hidden, n_classes, mus=mus, generator=generator)

    def forward(self, x_c: torch.Tensor, x_u: torch.Tensor, *, detach_common: bool = True) -> torch.Tensor:
        common = self.common.activations(x_c)
        if detach_common:
            common = [z.detach() for z in common]
        return common[-1].unsqueeze(0) + self.unique(x_u, common)


__all__ = ["CHFLNet", "Column", "PAPER_HIDDEN", "UniqueColumns"]
