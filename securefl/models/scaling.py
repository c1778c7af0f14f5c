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
        # a constant column's std can be rounding noise above any fixed cut-off (1e6 + 0.1 in every
        # row: 2e-10), which would blow a test value up by 1e10; such a column keeps scale 1
        with np.errstate(over="ignore"):
            constant = np.ptp(x, axis=0) == 0
        return cls(mean=np.where(constant, x[0], mean), scale=np.where((std > 1e-12) & ~constant, std, 1.0))

    def transform(self, x: np.ndarray) -> np.ndarray:
        """``x`` standardised, as float32 (the dtype every model here trains in)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.mean):
            raise InputError(f"scaler was fitted on {len(self.mean)} columns, got shape {list(x.shape)}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = (x - self.mean) / self.scale
            wide = ~np.isfinite(out) & np.isfinite(x)
            if wide.any():  # x - mean overflowed (columns of ~1e308): divide first
                out = np.where(wide, x / self.scale - self.mean / self.scale, out)
            out = out.astype(np.float32)
        if not np.isfinite(out[np.isfinite(x)]).all():
            column = int(np.flatnonzero((~np.isfinite(out) & np.isfinite(x)).any(axis=0))[0])
            raise InputError(f"column {column}: a value lies beyond float32's range once standardised by the"
                             " scaler fitted on the training rows")
        return out


__all__ = ["Standardizer", "rescaled_moments"]
