"""ROC AUC and average precision in numpy, against hand-worked values and scikit-learn."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from protocols.errors import InputError
from securefl.runtime.ranking import average_precision, roc_auc


def test_roc_auc_counts_pairs_and_ties_half():
    # Arrange: positives 0.8, 0.4; negatives 0.4, 0.1. Pairs: (0.8 > 0.4) (0.8 > 0.1) (0.4 = 0.4) (0.4 > 0.1)
    truth = np.array([1, 0, 1, 0])
    scores = np.array([0.8, 0.4, 0.4, 0.1])
    # Act / Assert: 3 wins and a tie of 4 pairs
    assert roc_auc(truth, scores) == pytest.approx(3.5 / 4)


def test_average_precision_steps_once_per_distinct_score():
    # Arrange: ranked 0.9 (pos), 0.7 (neg), 0.7 (pos), 0.2 (pos)
    truth = np.array([True, False, True, True])
    scores = np.array([0.9, 0.7, 0.7, 0.2])
    # Act
    value = average_precision(truth, scores)
    # Assert: recall 1/3 at precision 1, then +1/3 at 2/3 (the tied pair counts together), then +1/3 at 3/4
    assert value == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)


@pytest.mark.parametrize("metric", [roc_auc, average_precision])
def test_undefined_cases_give_nan(metric):
    assert math.isnan(metric(np.array([1, 1, 1]), np.array([0.1, 0.2, 0.3])))
    assert math.isnan(metric(np.array([0, 0]), np.array([0.1, 0.2])))
    assert math.isnan(metric(np.array([0, 1]), np.array([0.1, np.nan])))
    assert math.isnan(metric(np.array([0, 1]), np.array([-np.inf, 0.2])))


@pytest.mark.parametrize("metric", [roc_auc, average_precision])
def test_mismatched_lengths_are_an_input_error(metric):
    with pytest.raises(InputError, match="as many scores as labels"):
        metric(np.array([0, 1, 1]), np.array([0.5, 0.2]))


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(2, 60), levels=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_both_equal_scikit_learn(rows, levels, seed):
    # Arrange: few distinct score levels, so ties are common
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, rows)
    truth[:2] = [0, 1]
    scores = rng.integers(0, levels, rows) / levels + rng.choice([0.0, 1e-3], rows)
    # Act / Assert
    assert roc_auc(truth, scores) == pytest.approx(roc_auc_score(truth, scores), abs=1e-12)
    assert average_precision(truth, scores) == pytest.approx(average_precision_score(truth, scores), abs=1e-12)
