"""Centralized baseline: one MLP on every party's features joined by ID, in plaintext.

The STFL paper's "Centralized" row: all features are combined in one place and an
MLP with 5 x (all input features) hidden nodes is trained on the training rows and
tested on the test rows of the same split. Pass a split made with
``stfl_split(..., all_data=True)`` for "Centralized (all data)", where the
self-taught rows join the training set. No protocol runs: this is the
upper-bound comparison, not a federated method.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.errors import InputError
from securefl.algorithms.training import MethodResult, TrainConfig, binary_labels, train_and_evaluate
from securefl.data.split import VerticalSplit
from securefl.models import hidden_width, mlp
from securefl.runtime import SeedPlan, resolve_device


@dataclass(frozen=True)
class JoinedRows:
    """The active party's train and test rows with every passive party's features, by ID."""

    ids: tuple[str, ...]
    active: np.ndarray
    passive: tuple[np.ndarray, ...]
    labels: np.ndarray
    train: np.ndarray
    test: np.ndarray

    @property
    def features(self) -> np.ndarray:
        """``[active | passive 1 | passive 2 | ...]`` as one matrix."""
        return np.hstack([self.active, *self.passive])


def join_by_id(split: VerticalSplit) -> JoinedRows:
    """Join the split's train and test rows across parties by exact ID (plaintext).

    Rows whose ID a passive party lacks are dropped, as PSI would drop them.
    """
    ds = split.dataset
    wanted = split.train_ids | split.test_ids
    lookups = [{v: i for i, v in enumerate(p.ids)} for p in ds.passive]
    rows = [i for i, v in enumerate(ds.active.ids) if v in wanted and all(v in lk for lk in lookups)]
    if not rows:
        raise InputError(f"dataset {ds.name!r}: no train or test ID is held by every party")
    ids = tuple(ds.active.ids[i] for i in rows)
    passive = tuple(p.features[[lk[v] for v in ids]] for p, lk in zip(ds.passive, lookups))
    train = np.fromiter((v in split.train_ids for v in ids), dtype=bool, count=len(ids))
    test = np.fromiter((v in split.test_ids for v in ids), dtype=bool, count=len(ids))
    if not train.any() or not test.any():
        raise InputError(f"dataset {ds.name!r}: the joined rows hold {int(train.sum())} training and"
                         f" {int(test.sum())} test rows; both must be non-empty")
    labels = binary_labels(ds.active.labels[rows], owner=f"dataset {ds.name!r}")  # type: ignore[index]
    return JoinedRows(ids=ids, active=ds.active.features[rows], passive=passive, labels=labels,
                      train=train, test=test)


def plaintext_result(method: str, split: VerticalSplit, config: TrainConfig, joined: JoinedRows, *,
                     metrics: dict[str, float], phases: dict[str, float], seconds: float,
                     history: list[float], settings: dict[str, Any]) -> dict[str, Any]:
    """The result object of a plaintext baseline (no messages, so zero bytes)."""
    ds = split.dataset
    return MethodResult(
        method=method, dataset=ds.name, seed=config.seed, device=str(resolve_device(config.device)),
        metrics=metrics, seconds=seconds, bytes=0, phases=phases,
        bytes_per_party={p.name: 0 for p in ds.parties},
        settings={**config.settings(), "all_data": split.all_data, "split_seed": split.seed,
                  "train_rows": int(joined.train.sum()), "test_rows": int(joined.test.sum()), **settings},
        extra={"loss": history}).to_dict()


def run_centralized(split: VerticalSplit, config: TrainConfig) -> dict[str, Any]:
    """Train and test the centralized MLP on ``split``; the common result object."""
    start = time.perf_counter()
    joined = join_by_id(split)
    n_in = joined.features.shape[1]
    hidden = hidden_width(n_in, config.hidden_multiplier)
    model = mlp(n_in, hidden, generator=SeedPlan(config.seed).torch("centralized/mlp-init"))
    metrics, phases, history = train_and_evaluate(model, joined.features, joined.labels, joined.train,
                                                  joined.test, config=config, purpose="centralized")
    return plaintext_result("centralized", split, config, joined, metrics=metrics, phases=phases,
                           seconds=time.perf_counter() - start, history=history,
                           settings={"input_features": n_in, "hidden": hidden})


__all__ = ["JoinedRows", "join_by_id", "plaintext_result", "run_centralized"]
