"""Leakage attacks: labels from per-sample gradients, features from STFL's latents.

In split learning a passive party that receives dL/da for each of its rows, as HE-VFL's
passive party decrypts it (the STFL paper's Algorithm 2, last line), can guess the
active party's binary labels from those gradients alone (Li et al., "Label Leakage
and Protection in Two-party Split Learning", ICLR 2022):

- norm attack: score each row by ``||dL/da||``; with the logistic loss the gradient's
  size grows with the error ``|p - y|``, which differs between the classes, so no
  label need be known;
- cosine attack: score each row by the cosine between its gradient and that of one
  row whose label (positive) the attacker knows; dL/dlogit is ``p - y``, negative for
  positives and positive for negatives, so the gradients of the two classes point
  in opposite directions.

How well a score separates the labels is its AUROC: 0.5 is no leakage, 1.0 (or 0.0)
reveals every label. The scores use only what the passive party holds: its rows'
gradients; the labels are needed only to grade the attack.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from protocols.errors import InputError
from securefl.runtime.ranking import roc_auc


def _gradients(grads: np.ndarray) -> np.ndarray:
    grads = np.asarray(grads, dtype=np.float64)
    if grads.ndim != 2 or len(grads) == 0 or not np.all(np.isfinite(grads)):
        raise InputError(f"gradients must be a finite (rows, width) array with rows, got shape {grads.shape}")
    return grads


def norm_scores(grads: np.ndarray) -> np.ndarray:
    """The norm attack's score of each row: the L2 norm of its gradient."""
    return np.linalg.norm(_gradients(grads), axis=1)


def cosine_scores(grads: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The cosine attack's score of each row: cosine similarity with ``reference`` (a known positive's gradient)."""
    grads, reference = _gradients(grads), np.asarray(reference, dtype=np.float64).ravel()
    if reference.shape != (grads.shape[1],) or not np.linalg.norm(reference) > 0:
        raise InputError(f"the reference gradient must be a non-zero vector of width {grads.shape[1]}")
    norms = np.linalg.norm(grads, axis=1) * np.linalg.norm(reference)
    return np.divide(grads @ reference, norms, out=np.zeros(len(grads)), where=norms > 0)


def label_leakage(grads: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """AUROC of the attacks on ``grads`` (one row per observed sample) against binary ``labels``.

    The cosine attack's known positive is the first positive row; it is left out of the
    grading, since the attacker knew its label already. ``norm_auroc`` scores every row by
    its gradient's norm, no label known: a value far below 0.5 means the positives have the
    smaller gradients, and averaging it over steps lets steps on either side of 0.5 cancel.
    ``norm_auroc_oriented`` gives the norm attack the cosine attack's one known positive to
    choose the direction: larger norms are positive if that row's norm is at least the
    median of the others'. It is graded on the other rows, like the cosine attack.
    """
    grads, labels = _gradients(grads), np.asarray(labels).ravel()
    if len(labels) != len(grads) or not set(np.unique(labels)) <= {0, 1}:
        raise InputError("label_leakage needs one 0/1 label per gradient row")
    positives = np.flatnonzero(labels == 1)
    if len(positives) == 0 or len(positives) == len(labels):
        raise InputError("label_leakage needs rows of both classes to grade the attacks")
    known = positives[0]
    rest = np.delete(np.arange(len(labels)), known)
    cosine = cosine_scores(grads[rest], grads[known])
    graded, norms = labels[rest], norm_scores(grads)
    gradable = 0 < graded.mean() < 1
    sign = 1.0 if norms[known] >= np.median(norms[rest]) else -1.0
    return {"rows": int(len(labels)), "positive_rate": float(labels.mean()),
            "norm_auroc": roc_auc(labels, norms),
            "norm_auroc_oriented": roc_auc(graded, sign * norms[rest]) if gradable else None,
            "cosine_auroc": roc_auc(graded, cosine) if gradable else None,
            "known_row": int(known)}


def leakage_over_steps(steps: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """Both attacks on each (labels, gradients) step that holds both classes, their AUROCs averaged.

    Per step (batch) as in Li et al.: the cosine attack's known positive is one of the batch's rows.
    """
    graded = [label_leakage(grads, labels) for labels, grads in steps if 0 < np.mean(labels) < 1]
    if not graded:
        return {"steps": len(steps), "graded_steps": 0, "norm_auroc": None, "norm_auroc_oriented": None,
                "cosine_auroc": None}
    cosine = [g["cosine_auroc"] for g in graded if g["cosine_auroc"] is not None]
    oriented = [g["norm_auroc_oriented"] for g in graded if g["norm_auroc_oriented"] is not None]
    return {"steps": len(steps), "graded_steps": len(graded), "rows": sum(g["rows"] for g in graded),
            "positive_rate": float(np.mean([g["positive_rate"] for g in graded])),
            "norm_auroc": float(np.mean([g["norm_auroc"] for g in graded])),
            "norm_auroc_oriented": float(np.mean(oriented)) if oriented else None,
            "cosine_auroc": float(np.mean(cosine)) if cosine else None,
            "norm_auroc_per_step": [float(g["norm_auroc"]) for g in graded],
            "first_step": {k: graded[0][k] for k in ("norm_auroc", "norm_auroc_oriented", "cosine_auroc")}}


def graded_view(labels: Mapping[str, int], passive_ids: Sequence[str]
                ) -> tuple[list[tuple[np.ndarray, np.ndarray]], Callable[[int, np.ndarray, np.ndarray], None]]:
    """An ``observe`` callback for HE-VFL's passive party (``run_he_vfl(observe=...)``) and the list
    it fills with each step's (true labels, dL/da); ``labels`` maps an ID to the active party's
    label, used to grade the attacks only, and ``passive_ids`` are the passive table's row IDs."""
    steps: list[tuple[np.ndarray, np.ndarray]] = []

    def observe(step: int, rows: np.ndarray, grads: np.ndarray) -> None:
        steps.append((np.array([labels[passive_ids[r]] for r in rows]), grads))

    return steps, observe


def received(log: Iterable[Any]) -> dict[str, Any]:
    """What one party's transport delivered (a ``record=True`` log): messages, their kinds, how
    many float values they held (labels, gradients, model outputs and plain model updates could
    only be floats), and the 64-bit words (secure aggregation's masked vectors) with the share of
    their bits that are 1 and the share whose top two bits agree. Both are 0.5 for uniform
    masks; unmasked fixed-point values also have about half their bits set, but small ones
    start 00 or 11 in two's complement, so their top bits agree (about 1.0)."""
    log = list(log)
    floats = sum(int(v.size) for m in log for v in m.fields.values()
                 if isinstance(v, np.ndarray) and v.dtype.kind in "fc")
    floats += sum(1 for m in log for v in m.fields.values() if isinstance(v, float))
    words = [v for m in log for v in m.fields.values() if isinstance(v, np.ndarray) and v.dtype == np.uint64]
    count = sum(int(w.size) for w in words)
    ones = sum(int(np.unpackbits(np.ascontiguousarray(w).view(np.uint8)).sum()) for w in words)
    agree = sum(int(((np.asarray(w) >> np.uint64(63)) == ((np.asarray(w) >> np.uint64(62)) & np.uint64(1))).sum())
                for w in words)
    return {"messages": len(log), "float_values": floats, "uint64_words": count,
            "uint64_one_bit_rate": ones / (64 * count) if count else None,
            "uint64_top_bits_agree": agree / count if count else None,
            "kinds": dict(Counter(f"{m.tag.stage}/{m.tag.name}" for m in log))}


def feature_reconstruction(latents: np.ndarray, features: np.ndarray, *, known: float, seed: int,
                           ridge: float = 1e-3) -> dict[str, Any]:
    """How well a party holding ``latents`` rebuilds the ``features`` they encode, given some rows.

    STFL's active party receives a passive party's latents for the common rows. An attacker
    who also knows the features of a random ``known`` share of those rows (auxiliary data:
    customers it shares, public records) fits a ridge regression with intercept from latents
    to features on them and predicts the other rows. The score is R² per feature on the
    predicted rows, about the known rows' mean (0: no better than that mean; 1: exact). ``r2``
    averages it over features floored at 0: a negative R² is a fit worse than that mean, which
    the attacker can always keep instead, and one heavy-tailed feature's large negative R²
    (one outlier among the scored rows dominates its spread) would otherwise cancel what the
    other features give away. ``r2_unfloored`` is the plain mean. A linear attacker only: a
    lower bound on what the latents give away.
    """
    latents, features = np.asarray(latents, dtype=np.float64), np.asarray(features, dtype=np.float64)
    if latents.ndim != 2 or features.ndim != 2 or len(latents) != len(features):
        raise InputError(f"latents and features must be 2-D with one row each per sample, got shapes "
                         f"{latents.shape} and {features.shape}")
    if not 0.0 < known < 1.0:
        raise InputError(f"known must be a share of the rows strictly between 0 and 1, got {known!r}")
    order = np.random.default_rng(seed).permutation(len(latents))
    k = int(round(known * len(latents)))
    if k < 2 or len(latents) - k < 2:
        raise InputError(f"known={known} of {len(latents)} rows leaves fewer than 2 rows to fit or to score")
    fit, score = order[:k], order[k:]
    design = np.hstack([latents, np.ones((len(latents), 1))])
    penalty = ridge * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the intercept is not shrunk
    weights = np.linalg.solve(design[fit].T @ design[fit] + penalty, design[fit].T @ features[fit])
    residual = features[score] - design[score] @ weights
    spread = features[score] - features[fit].mean(axis=0)
    sst = (spread ** 2).sum(axis=0)
    per_feature = 1.0 - (residual ** 2).sum(axis=0) / np.where(sst > 0, sst, np.nan)
    return {"r2": float(np.nanmean(np.maximum(per_feature, 0.0))), "r2_unfloored": float(np.nanmean(per_feature)),
            "r2_per_feature": [float(v) for v in per_feature], "known_rows": k, "scored_rows": len(score)}


__all__ = ["cosine_scores", "feature_reconstruction", "graded_view", "label_leakage", "leakage_over_steps",
           "norm_scores", "received"]
