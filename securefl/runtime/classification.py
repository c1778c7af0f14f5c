"""Binary and multiclass classification metrics (AUROC, accuracy, balanced accuracy, AUPRC).

Used by GL and its baselines, and reusable by any method that outputs class
probabilities. Multiclass AUROC and AUPRC are one-vs-rest and macro-averaged over
the classes that occur in ``labels`` (a client's own classes: a column of a
globally encoded output that the client never sees is skipped, as is a class
whose one-vs-rest problem has a single label value).
"""

from __future__ import annotations

import numpy as np

from protocols.errors import InputError
from securefl.runtime.ranking import average_precision, roc_auc


def _check(labels: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    raw = np.asarray(labels).ravel()
    labels = raw.astype(np.int64)
    if raw.dtype.kind == "f" and not np.array_equal(labels, raw):
        raise InputError(f"labels must be whole class indices, got {raw[labels != raw][0].item()!r}")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim not in (1, 2):
        raise InputError(f"probs must be one probability per row or one row per label, got shape {probs.shape}")
    if probs.ndim == 2 and probs.shape[1] == 1:
        probs = probs[:, 0]
    if labels.size == 0 or probs.shape[0] != labels.size:
        raise InputError(f"need one probability row per label (got {probs.shape[0]} rows, {labels.size} labels)")
    top = probs.shape[1] - 1 if probs.ndim == 2 else 1
    if labels.min() < 0 or labels.max() > top:
        raise InputError(f"labels must lie in 0..{top}, got {labels.min()}..{labels.max()}")
    return labels, probs


def predictions(probs: np.ndarray, *, threshold: float = 0.5) -> np.ndarray:
    """Predicted classes: argmax of the rows, or ``p >= threshold`` for 1-D (binary) probabilities."""
    probs = np.asarray(probs)
    if probs.ndim == 2 and probs.shape[1] > 1:
        return probs.argmax(axis=1)
    return (probs.ravel() >= threshold).astype(np.int64)


def one_vs_rest(labels: np.ndarray, probs: np.ndarray, score) -> float:
    """Macro mean of ``score(is_class, p_class)`` over the classes present in ``labels`` (NaN if none count)."""
    values = [score(labels == k, probs[:, k]) for k in np.unique(labels)
              if 0 < np.sum(labels == k) < labels.size]
    return float(np.mean(values)) if values else float("nan")


def auroc(labels: np.ndarray, probs: np.ndarray) -> float:
    """Binary AUROC of P(class 1), or one-vs-rest macro AUROC for a probability matrix."""
    labels, probs = _check(labels, probs)
    if probs.ndim == 2:
        return one_vs_rest(labels, probs, roc_auc)
    return roc_auc(labels, probs)


def auprc(labels: np.ndarray, probs: np.ndarray) -> float:
    """Average precision of class 1, or its one-vs-rest macro mean for a probability matrix."""
    labels, probs = _check(labels, probs)
    if probs.ndim == 2:
        return one_vs_rest(labels, probs, average_precision)
    return average_precision(labels, probs)


def accuracy(labels: np.ndarray, probs: np.ndarray) -> float:
    """Share of rows whose predicted class is the label (NaN if a probability is not finite)."""
    labels, probs = _check(labels, probs)
    if not np.isfinite(probs).all():
        return float("nan")
    return float(np.mean(predictions(probs) == labels))


def balanced_accuracy(labels: np.ndarray, probs: np.ndarray) -> float:
    """Mean recall over the classes present in ``labels`` (NaN if a probability is not finite)."""
    labels, probs = _check(labels, probs)
    if not np.isfinite(probs).all():
        return float("nan")
    predicted = predictions(probs)
    return float(np.mean([np.mean(predicted[labels == k] == k) for k in np.unique(labels)]))


def per_class(labels: np.ndarray, probs: np.ndarray) -> list[dict[str, float | int | None]]:
    """One-vs-rest AUROC, AUPRC and recall of every output column (None where a class has no
    rows, or no other rows), with its row count: enough to recompute a macro mean under any
    convention for classes a client lacks (e.g. a padded FedAvg model's global classes)."""
    labels, probs = _check(labels, probs)
    return _per_class(labels, probs, predictions(probs))


def _per_class(labels: np.ndarray, probs: np.ndarray, predicted: np.ndarray) -> list[dict[str, float | int | None]]:
    if probs.ndim == 1:
        probs = np.stack([1.0 - probs, probs], axis=1)
    finite = bool(np.isfinite(probs).all())  # argmax or a threshold of nan picks a class: no recall then
    out = []
    for k in range(probs.shape[1]):
        hit = labels == k
        n = int(np.sum(hit))
        both = 0 < n < labels.size
        out.append({"class": k, "support": n,
                    "auroc": roc_auc(hit, probs[:, k]) if both else None,
                    "auprc": average_precision(hit, probs[:, k]) if both else None,
                    "recall": float(np.mean(predicted[hit] == k)) if n and finite else None})
    return out


def classification_report(labels: np.ndarray, probs: np.ndarray) -> tuple[dict[str, float], list[dict]]:
    """``classification_metrics`` and ``per_class`` from one one-vs-rest pass: the macro values
    are means of the per-class ones over the classes present (class 1 alone for binary input)."""
    labels, probs = _check(labels, probs)
    predicted = predictions(probs)
    rows = _per_class(labels, probs, predicted)
    scored = rows[1:] if probs.ndim == 1 else rows

    def macro(metric: str) -> float:
        values = [r[metric] for r in scored if r[metric] is not None]
        return float(np.mean(values)) if values else float("nan")

    if not np.isfinite(probs).all():  # no accuracy of a diverged model (see _per_class)
        accuracy_, balanced = float("nan"), float("nan")
    else:
        accuracy_ = float(np.mean(predicted == labels))
        balanced = float(np.mean([r["recall"] for r in rows if r["support"]]))
    metrics = {"auroc": macro("auroc"), "accuracy": accuracy_, "balanced_accuracy": balanced,
               "auprc": macro("auprc")}
    return metrics, rows


def classification_metrics(labels: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    """``auroc``, ``accuracy``, ``balanced_accuracy`` and ``auprc`` of one set of predictions."""
    return classification_report(labels, probs)[0]


__all__ = ["accuracy", "auprc", "auroc", "balanced_accuracy", "classification_metrics",
           "classification_report", "one_vs_rest",
           "per_class", "predictions"]
