"""Classification metrics computed the same way for every method."""

from __future__ import annotations

import numpy as np

from protocols.errors import InputError
from securefl.runtime.ranking import roc_auc


def finite_scores(scores: np.ndarray, *, who: str) -> np.ndarray:
    """``scores`` unchanged, or InputError naming ``who`` if one is NaN or infinite: a diverged model's
    scores would otherwise all fall on one side of the threshold and pass for a (majority-class) accuracy."""
    if not np.isfinite(np.asarray(scores, dtype=np.float64)).all():
        raise InputError(f"{who}: the trained model's test scores hold nan or inf (training diverged;"
                         " a lower learning rate may help)")
    return scores


def binary_metrics(labels: np.ndarray, scores: np.ndarray, *, threshold: float = 0.5) -> dict[str, float]:
    """Accuracy (score >= threshold is class 1) and AUROC of the greater label. AUROC is NaN when
    one class is absent; both are NaN when a score is not finite (no metric of a diverged model)."""
    labels = np.asarray(labels).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if labels.shape != scores.shape or labels.size == 0:
        raise InputError(f"need as many scores as labels (got {scores.size} and {labels.size})")
    if not np.isfinite(scores).all():
        return {"accuracy": float("nan"), "auroc": float("nan")}
    accuracy = float(np.mean((scores >= threshold).astype(np.int64) == labels))
    return {"accuracy": accuracy, "auroc": roc_auc(labels == np.max(labels), scores)}
