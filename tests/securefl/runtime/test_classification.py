"""Classification metrics: binary and one-vs-rest multiclass, on hand-checkable cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import InputError
from securefl.runtime.classification import (accuracy, auprc, auroc, balanced_accuracy, classification_metrics,
                                             classification_report, per_class, predictions)


def test_binary_metrics_on_a_perfect_ranking():
    # Arrange
    labels = np.array([0, 0, 1, 1])
    probs = np.array([0.1, 0.6, 0.7, 0.9])
    # Act
    out = classification_metrics(labels, probs)
    # Assert: ranking perfect, but 0.6 is predicted as class 1
    assert out["auroc"] == 1.0 and out["auprc"] == 1.0
    assert out["accuracy"] == 0.75
    assert out["balanced_accuracy"] == 0.75


def test_balanced_accuracy_weights_classes_equally():
    # Arrange: 3 of class 0 right, the single class 1 wrong
    labels = np.array([0, 0, 0, 1])
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    # Act / Assert
    assert accuracy(labels, probs) == 0.75
    assert balanced_accuracy(labels, probs) == 0.5


def test_multiclass_skips_columns_of_absent_classes():
    # Arrange: 3 output columns (a global encoding) but only classes 0 and 2 occur
    labels = np.array([0, 0, 2, 2])
    probs = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.1, 0.3, 0.6], [0.2, 0.1, 0.7]])
    # Act / Assert
    assert auroc(labels, probs) == 1.0
    assert auprc(labels, probs) == 1.0
    np.testing.assert_array_equal(predictions(probs), [0, 0, 2, 2])


def test_multiclass_auroc_is_the_macro_mean_over_classes():
    # Arrange: class 0 perfectly ranked, class 1 inverted
    labels = np.array([0, 1, 1, 0])
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.3, 0.7]])
    # Act
    value = auroc(labels, probs)
    # Assert: class 0: 0.75 of pairs right; class 1 the same by symmetry
    assert value == pytest.approx(0.75)


def test_mismatched_lengths_are_an_input_error():
    with pytest.raises(InputError, match="one probability row per label"):
        auroc(np.array([0, 1]), np.array([0.5]))


def test_per_class_reports_every_output_column_and_marks_absent_classes():
    # Arrange: 3 output columns, class 1 never occurs; class 0 ranked perfectly, class 2 with one tie
    labels = np.array([0, 0, 2, 2])
    probs = np.array([[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.2, 0.1, 0.7], [0.5, 0.2, 0.3]])
    # Act
    rows = per_class(labels, probs)
    # Assert
    assert [r["support"] for r in rows] == [2, 0, 2]
    assert rows[1]["auroc"] is None and rows[1]["auprc"] is None and rows[1]["recall"] is None
    assert rows[0]["auroc"] == pytest.approx(1.0) and rows[0]["recall"] == pytest.approx(1.0)
    assert rows[2]["auroc"] == pytest.approx(0.875) and rows[2]["recall"] == pytest.approx(0.5)
    assert np.mean([rows[0]["auroc"], rows[2]["auroc"]]) == pytest.approx(auroc(labels, probs))


def test_per_class_of_binary_probabilities_has_both_classes():
    rows = per_class(np.array([0, 1, 1]), np.array([0.2, 0.9, 0.4]))
    assert [r["class"] for r in rows] == [0, 1] and rows[1]["auroc"] == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(2, 40), columns=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_report_agrees_with_the_reference_metrics(rows, columns, seed):
    # Arrange: random labels (some classes absent) and probabilities rounded so ties (also at 0.5) occur
    gen = np.random.default_rng(seed)
    width = max(columns, 2)
    labels = gen.integers(0, width, rows)
    probs = np.round(gen.dirichlet(np.ones(width), rows), 1)
    if columns == 1:
        probs = probs[:, 1]
    # Act
    metrics, classes = classification_report(labels, probs)
    # Assert: one pass gives what the separate reference functions give
    reference = {"auroc": auroc(labels, probs), "auprc": auprc(labels, probs),
                 "accuracy": accuracy(labels, probs), "balanced_accuracy": balanced_accuracy(labels, probs)}
    for name, value in reference.items():
        assert metrics[name] == pytest.approx(value, nan_ok=True), name
    assert classes == per_class(labels, probs)


def test_binary_labels_outside_zero_one_are_an_input_error():
    with pytest.raises(InputError, match=r"labels must lie in 0\.\.1, got 0\.\.2"):
        classification_report(np.array([0, 2]), np.array([0.3, 0.6]))


@pytest.mark.parametrize("probs", [np.array([np.nan, 0.2, np.nan, 0.9]),
                                   np.array([[np.nan, np.nan, np.nan]] * 4),
                                   np.array([[0.5, 0.5, np.inf]] * 4)])
def test_a_diverged_model_has_no_accuracy(probs):
    # Arrange: argmax / thresholding of nan picks class 0, which is right for the label-0 rows
    labels = np.array([0, 0, 1, 1]) if probs.ndim == 1 else np.array([0, 0, 1, 2])
    # Act
    metrics, rows = classification_report(labels, probs)
    # Assert
    assert np.isnan(metrics["accuracy"]) and np.isnan(metrics["balanced_accuracy"])
    assert np.isnan(accuracy(labels, probs)) and np.isnan(balanced_accuracy(labels, probs))
    assert all(r["recall"] is None for r in rows + per_class(labels, probs))


@pytest.mark.parametrize(("labels", "probs", "message"), [
    (np.array([0.5, 1.0]), np.array([0.2, 0.9]), r"labels must be whole class indices, got 0\.5"),
    (np.array([0]), np.array(0.3), r"probs must be .* got shape \(\)"),
    (np.array([0, 1]), np.zeros((2, 2, 2)), r"probs must be .* got shape \(2, 2, 2\)"),
])
def test_malformed_labels_or_probabilities_are_input_errors(labels, probs, message):
    with pytest.raises(InputError, match=message):
        classification_report(labels, probs)
