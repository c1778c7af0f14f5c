"""Standardisation fitted by one party on the rows it is allowed to learn from.

Each party fits its own scaler (DESIGN.md, "Data"): a passive party in STFL on its
self-taught rows, the active party on its training rows; test rows never
influence it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.errors import InputError


def rescaled_moments(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's mean and std (NaN ignored), computed on the column divided by its largest |value|:
    for columns whose squares pass float64's range (|x| ~ 1e154 and up), where the plain formulas overflow."""
    peak = np.nanmax(np.abs(values), axis=0)
    peak = np.where(peak > 0, peak, 1.0)
    scaled = values / peak
    return np.nanmean(scaled, axis=0) * peak, np.nanstd(scaled, axis=0) * peak


@dataclass(frozen=True)
class Standardizer:
    """Per-column ``(x - mean) / scale``; constant columns keep scale 1."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> "Standardizer":
        """Column means and standard deviations of ``x`` (at least one row)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] == 0:
            raise InputError(f"a scaler needs a non-empty 2-D array, got shape {list(x.shape)}")
        with np.errstate(over="ignore", invalid="ignore"):
            mean, std = x.mean(axis=0), x.std(axis=0)
        huge = ~(np.isfinite(mean) & np.isfinite(std))
        if huge.any():
            if not np.isfinite(x[:, huge]).all():
                raise InputError("a scaler needs finite values; a column holds NaN or infinity")
            mean, std = mean.copy(), std.copy()
            mean[huge], std[huge] = rescaled_moments(x[:, huge])
        return cls(mean=mean, scale=np.where(std > 1e-12, std, 1.0))

    def transform(self, x: np.ndarray) -> np.ndarray:
        """``x`` standardised, as float32 (the dtype every model here trains in)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.mean):
            raise InputError(f"scaler was fitted on {len(self.mean)} columns, got shape {list(x.shape)}")
        return ((x - self.mean) / self.scale).astype(np.float32)


__all__ = ["Standardizer", "rescaled_moments"]
