"""Binary metrics, and the refusal to score a diverged model."""

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.runtime import binary_metrics, finite_scores


def test_binary_metrics_threshold_and_ranking():
    # Arrange: a perfect ranking, but 0.6 is over the 0.5 threshold
    labels, scores = np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.7, 0.9])
    # Act
    out = binary_metrics(labels, scores)
    # Assert
    assert out == {"accuracy": 0.75, "auroc": 1.0}


def test_binary_metrics_of_non_finite_scores_are_nan():
    # Arrange: nan >= 0.5 is False, so nan scores would "predict" class 0 and score 0.5 here
    labels, scores = np.array([0, 0, 1, 1]), np.array([np.nan, 0.2, np.nan, 0.9])
    # Act
    out = binary_metrics(labels, scores)
    # Assert
    assert np.isnan(out["accuracy"]) and np.isnan(out["auroc"])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finite_scores_names_who_diverged(bad):
    with pytest.raises(InputError, match=r"^centralized: the trained model's test scores hold nan or inf \(training"
                                         r" diverged"):
        finite_scores(np.array([0.1, bad]), who="centralized")


def test_finite_scores_passes_finite_scores_through():
    scores = np.array([0.0, 1.0, 0.5])
    assert finite_scores(scores, who="x") is scores
