"""Classification metrics computed the same way for every method."""

from __future__ import annotations

import numpy as np

from protocols.errors import InputError
from securefl.runtime.ranking import roc_auc


def binary_metrics(labels: np.ndarray, scores: np.ndarray, *, threshold: float = 0.5) -> dict[str, float]:
    """Accuracy (score >= threshold is class 1) and AUROC of the greater label (NaN when one class
    is absent or a score is not finite)."""
    labels = np.asarray(labels).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if labels.shape != scores.shape or labels.size == 0:
        raise InputError(f"need as many scores as labels (got {scores.size} and {labels.size})")
    accuracy = float(np.mean((scores >= threshold).astype(np.int64) == labels))
    return {"accuracy": accuracy, "auroc": roc_auc(labels == np.max(labels), scores)}
