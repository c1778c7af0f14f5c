"""ROC AUC and average precision of one binary problem, in numpy.

They give scikit-learn's ``roc_auc_score`` and ``average_precision_score`` values (tied
scores count half in the AUROC; the average precision steps once per distinct score),
up to float rounding. Why not sklearn: importing ``sklearn.metrics`` takes about 2 s,
and a method scores its test rows at the end of its run, inside the clock, so every
``securefl run`` reported those seconds as its own (a centralized breast run: 3.55 s,
most of it the import).
"""

from __future__ import annotations

import numpy as np

from protocols.errors import InputError


def _problem(truth: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Boolean truth and float scores of one length; None where the metric is undefined
    (one class only, or a score that is NaN or infinite, as a diverged model gives)."""
    truth = np.asarray(truth).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if truth.shape != scores.shape:
        raise InputError(f"need as many scores as labels (got {scores.size} and {truth.size})")
    truth = truth.astype(bool)
    if truth.all() or not truth.any() or not np.all(np.isfinite(scores)):
        return None
    return truth, scores


def roc_auc(truth: np.ndarray, scores: np.ndarray) -> float:
    """P(a random positive scores above a random negative), ties counting half (Mann-Whitney U).

    ``truth``: which rows are positive (bool or 0/1). NaN with one class only or a
    non-finite score.
    """
    problem = _problem(truth, scores)
    if problem is None:
        return float("nan")
    truth, scores = problem
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # 1-based, ties averaged
    positives = float(truth.sum())
    negatives = truth.size - positives
    return float((ranks[truth].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def average_precision(truth: np.ndarray, scores: np.ndarray) -> float:
    """Sum over the distinct scores, highest first, of the recall gained times the precision there.

    NaN with one class only or a non-finite score.
    """
    problem = _problem(truth, scores)
    if problem is None:
        return float("nan")
    truth, scores = problem
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], truth[order]
    last = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]  # last row of each distinct score
    true_positives = np.cumsum(hits)[last]
    precision = true_positives / (last + 1.0)
    recall = true_positives / float(hits.sum())
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


__all__ = ["average_precision", "roc_auc"]
