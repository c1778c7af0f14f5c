"""Small vertical datasets for fast tests: synthetic separable data and sklearn's breast cancer."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from securefl.data import PartyTable, VerticalDataset


def _table(name: str, ids: Sequence[str], x: np.ndarray, rows: np.ndarray,
           labels: np.ndarray | None = None) -> PartyTable:
    return PartyTable(name=name, ids=tuple(ids[i] for i in rows), features=x[rows],
                      feature_names=tuple(f"{name}_{j}" for j in range(x.shape[1])),
                      labels=None if labels is None else labels[rows])


def synthetic(n: int = 300, *, active_features: int = 3, passive_features: Sequence[int] = (6,),
              seed: int = 0, passive_rows: Sequence[np.ndarray | None] | None = None) -> VerticalDataset:
    """A dataset whose label depends on every party's features (linearly separable).

    Each party's features mix ``max(1, width // 2)`` hidden factors plus a little
    noise, as correlated real features do, so half-width latents can keep the
    signal; the label is the sign of a weighted sum of all factors. Each party
    holds its rows in its own shuffled order; ``passive_rows[k]`` (row numbers in
    0..n-1) restricts passive party k to some rows (default: all).
    """
    rng = np.random.default_rng(seed)
    widths = [active_features, *passive_features]
    blocks, score = [], np.zeros(n)
    for width in widths:
        factors = rng.normal(size=(n, max(1, width // 2)))
        mixed = factors @ rng.normal(size=(factors.shape[1], width)) + 0.1 * rng.normal(size=(n, width))
        blocks.append(mixed * rng.uniform(0.5, 5.0, size=width) + rng.normal(size=width))
        score += factors @ rng.normal(size=factors.shape[1])
    labels = (score > np.median(score)).astype(np.int64)
    ids = [f"u{i:05d}" for i in range(n)]
    active = _table("active", ids, blocks[0], rng.permutation(n), labels)
    passive = []
    for k, block in enumerate(blocks[1:]):
        rows = None if passive_rows is None else passive_rows[k]
        rows = rng.permutation(n) if rows is None else rng.permutation(np.asarray(rows))
        passive.append(_table(f"passive{k + 1}", ids, block, rows))
    return VerticalDataset(name="synthetic", active=active, passive=tuple(passive))


def breast(active_features: int = 10) -> VerticalDataset:
    """sklearn's breast cancer: active party the first ``active_features`` columns, passive the rest."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    ids = [f"p{i:04d}" for i in range(len(x))]
    rng = np.random.default_rng(7)
    active = _table("active", ids, x[:, :active_features], rng.permutation(len(x)), y)
    passive = _table("passive", ids, x[:, active_features:], rng.permutation(len(x)))
    return VerticalDataset(name="breast", active=active, passive=(passive,))


def majority_rate(labels: np.ndarray) -> float:
    """Accuracy of always predicting the most common class."""
    return float(max(np.mean(labels), 1 - np.mean(labels)))
