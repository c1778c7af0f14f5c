"""Classification metrics computed the same way for every method."""

from __future__ import annotations

import numpy as np

from protocols.errors import InputError


def binary_metrics(labels: np.ndarray, scores: np.ndarray, *, threshold: float = 0.5) -> dict[str, float]:
    """Accuracy (score >= threshold is class 1) and AUROC (NaN when one class is absent)."""
    from sklearn.metrics import roc_auc_score  # here: sklearn.metrics takes ~2 s to import, and a party
    # process that never scores (a passive party, a hub) should not pay it at start-up
    labels = np.asarray(labels).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if labels.shape != scores.shape or labels.size == 0:
        raise InputError(f"need as many scores as labels (got {scores.size} and {labels.size})")
    accuracy = float(np.mean((scores >= threshold).astype(np.int64) == labels))
    auroc = float(roc_auc_score(labels, scores)) if len(np.unique(labels)) == 2 else float("nan")
    return {"accuracy": accuracy, "auroc": auroc}
