"""Label-inference attacks on per-sample gradients: known answers, chance level, bad input."""

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.runtime.leakage import cosine_scores, label_leakage, norm_scores


def _logistic_gradients(labels, probs, direction):
    """dL/da of a linear logit: (p - y) times one fixed direction, as split learning's passive party gets it."""
    return (np.asarray(probs) - np.asarray(labels))[:, None] * np.asarray(direction)[None, :]


def test_norm_and_cosine_scores_are_the_definitions():
    grads = np.array([[3.0, 4.0], [0.0, -2.0], [1.0, 0.0]])

    assert norm_scores(grads) == pytest.approx([5.0, 2.0, 1.0])
    assert cosine_scores(grads, np.array([1.0, 0.0])) == pytest.approx([0.6, 0.0, 1.0])


def test_gradients_of_a_logistic_loss_give_every_label_away():
    # Arrange: positives predicted at 0.3 (gradient -0.7 v), negatives at 0.4 (+0.4 v)
    labels = np.array([1, 0, 0, 1, 0, 1, 0, 0])
    grads = _logistic_gradients(labels, np.where(labels == 1, 0.3, 0.4), [0.5, -1.0, 2.0])
    # Act
    leak = label_leakage(grads, labels)
    # Assert: the cosine with a known positive separates perfectly; so do the norms (0.7 > 0.4)
    assert leak["cosine_auroc"] == 1.0 and leak["norm_auroc"] == 1.0
    assert leak["known_row"] == 0 and leak["rows"] == 8 and leak["positive_rate"] == 3 / 8


def test_gradients_unrelated_to_the_labels_leave_the_attacks_near_chance():
    rng = np.random.default_rng(7)  # test data, not key material
    labels = rng.integers(0, 2, size=4000)

    leak = label_leakage(rng.normal(size=(4000, 16)), labels)

    assert abs(leak["norm_auroc"] - 0.5) < 0.05 and abs(leak["cosine_auroc"] - 0.5) < 0.05


@pytest.mark.parametrize("grads, labels, message", [
    (np.zeros((3,)), [0, 1, 1], "finite \\(rows, width\\) array"),
    (np.array([[np.nan, 1.0], [1.0, 1.0]]), [0, 1], "finite"),
    (np.ones((3, 2)), [0, 1], "one 0/1 label per gradient row"),
    (np.ones((3, 2)), [0, 2, 1], "one 0/1 label per gradient row"),
    (np.ones((3, 2)), [1, 1, 1], "rows of both classes"),
])
def test_bad_input_is_one_clear_error(grads, labels, message):
    with pytest.raises(InputError, match=message):
        label_leakage(grads, np.array(labels))


def test_a_zero_or_misshapen_reference_is_refused():
    with pytest.raises(InputError, match="non-zero vector of width 2"):
        cosine_scores(np.ones((3, 2)), np.zeros(2))
    with pytest.raises(InputError, match="non-zero vector of width 2"):
        cosine_scores(np.ones((3, 2)), np.ones(3))
