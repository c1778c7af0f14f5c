"""Silo models for TDCD: each silo's contribution to the shared output, Phi_j = h_j(X_j).

The paper's model is partially separable: the prediction is the sum over silos of
``h_j(X_j; theta_j)``, so a silo needs the others' contributions (their "intermediate
information"), never their features or weights.

* :class:`LinearSilo` -- ``h_j(x) = x theta_j`` (the convex ridge-regression case);
  weights start at zero.
* :class:`ImageSilo` -- the paper's non-convex case: a local CNN (two conv layers and a
  256-dimensional embedding) on the silo's columns of an image, followed by the silo's
  block of the shared linear classifier (512 -> 10 for two silos). Silo 0 holds the
  classifier's bias.

Initial weights come from a ``torch.Generator``, never the global RNG: clients run as
threads of one process, and a shared RNG seeded by each would hand the clients of one
silo different initial weights (whose average is a shrunken, barely trainable model).
"""

from __future__ import annotations

import torch
from torch import nn

from securefl.models.mlp import seeded_

EMBEDDING = 256


class LinearSilo(nn.Module):
    """``x theta`` with ``theta`` of shape (features, outputs), starting at zero."""

    def __init__(self, features: int, outputs: int = 1) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(features, outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.theta


class ImageSilo(nn.Module):
    """conv(32) - pool - conv(64) - pool - linear(256) - ReLU on an (H x W) slice, then the silo's
    (256 -> classes) block of the shared classifier."""

    def __init__(self, height: int, width: int, classes: int, *, bias: bool,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        flat = 64 * (height // 4) * (width // 4)
        if flat == 0:
            raise ValueError(f"an image slice of {height}x{width} pixels is too small for two 2x2 poolings")
        self.embed = nn.Sequential(nn.Linear(flat, EMBEDDING), nn.ReLU())
        self.classifier = nn.Linear(EMBEDDING, classes, bias=bias)
        seeded_(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.embed(self.features(x.unsqueeze(1))))


__all__ = ["EMBEDDING", "ImageSilo", "LinearSilo"]
