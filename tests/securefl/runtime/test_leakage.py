"""Label-inference attacks on per-sample gradients: known answers, chance level, bad input."""

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.runtime.leakage import (cosine_scores, graded_view, label_leakage, leakage_over_steps, norm_scores,
                                     received)


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


def test_the_known_positive_turns_a_norm_attack_scoring_below_chance_around():
    # Arrange: positives predicted at 0.9 (gradient -0.1 v), negatives at 0.6 (+0.6 v): the
    # positives have the smaller gradients, so larger-norm-is-positive ranks them all last
    labels = np.array([1, 0, 0, 1, 0, 1, 0, 0])
    grads = _logistic_gradients(labels, np.where(labels == 1, 0.9, 0.6), [0.5, -1.0, 2.0])
    # Act
    leak = label_leakage(grads, labels)
    # Assert: unoriented it reads 0.0, which leaks as much as 1.0; the known positive orients it
    assert leak["norm_auroc"] == 0.0 and leak["norm_auroc_oriented"] == 1.0


def test_gradients_unrelated_to_the_labels_leave_the_attacks_near_chance():
    rng = np.random.default_rng(7)  # test data, not key material
    labels = rng.integers(0, 2, size=4000)

    leak = label_leakage(rng.normal(size=(4000, 16)), labels)

    assert abs(leak["norm_auroc"] - 0.5) < 0.05 and abs(leak["cosine_auroc"] - 0.5) < 0.05
    assert abs(leak["norm_auroc_oriented"] - 0.5) < 0.05


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


def test_over_steps_the_attacks_are_averaged_over_the_steps_with_both_classes():
    # Arrange: two graded steps and one all-negative step (nothing to grade there)
    labels = np.array([1, 0, 1, 0])
    leaky = (labels, _logistic_gradients(labels, [0.3, 0.4, 0.3, 0.4], [1.0, 2.0]))
    rng = np.random.default_rng(3)  # test data, not key material
    noise = (labels, rng.normal(size=(4, 2)))
    # Act
    out = leakage_over_steps([leaky, (np.zeros(4, dtype=int), np.ones((4, 2))), noise])
    # Assert
    first, second = label_leakage(leaky[1], labels), label_leakage(noise[1], labels)
    assert out["steps"] == 3 and out["graded_steps"] == 2 and out["rows"] == 8
    assert out["cosine_auroc"] == pytest.approx((first["cosine_auroc"] + second["cosine_auroc"]) / 2)
    assert out["first_step"] == {"norm_auroc": 1.0, "norm_auroc_oriented": 1.0, "cosine_auroc": 1.0}
    assert out["norm_auroc_per_step"] == [first["norm_auroc"], second["norm_auroc"]]
    assert leakage_over_steps([])["cosine_auroc"] is None


def test_received_counts_the_float_values_a_transport_delivered():
    from protocols.codec import Tag
    from protocols.transport import run_parties

    def sender(transport):
        transport.send("b", Tag(0, "x", "ints"), {"rows": np.arange(5),
                                                  "y": np.array([0, 2**64 - 1, 1], dtype=np.uint64)})
        transport.send("b", Tag(0, "x", "floats"), {"g": np.ones((2, 3)), "s": 1.5, "raw": b"ab"})

    def receiver(transport):
        transport.recv("a", Tag(0, "x", "ints"))
        transport.recv("a", Tag(0, "x", "floats"))

    run = run_parties({"a": sender, "b": receiver}, record=True)

    assert received(run.logs["b"]) == {"messages": 2, "float_values": 7, "uint64_words": 3,
                                       "uint64_one_bit_rate": 65 / 192, "uint64_top_bits_agree": 1.0,
                                       "kinds": {"x/ints": 1, "x/floats": 1}}


def test_top_bits_tell_uniform_masks_from_unmasked_fixed_point_where_the_one_bit_share_does_not():
    from types import SimpleNamespace

    from protocols.codec import Tag
    from protocols.channels.fixedpoint import encode

    rng = np.random.default_rng(5)  # test data, not key material
    plain = encode(rng.normal(scale=0.01, size=20_000), scale_bits=24, n_summands=5)  # small updates, unmasked
    masked = rng.integers(0, 2**64, size=20_000, dtype=np.uint64)
    tag = Tag(0, "secagg", "masked")

    plain_view = received([SimpleNamespace(tag=tag, fields={"y": plain})])
    masked_view = received([SimpleNamespace(tag=tag, fields={"y": masked})])

    assert abs(masked_view["uint64_one_bit_rate"] - 0.5) < 0.01 and abs(plain_view["uint64_one_bit_rate"] - 0.5) < 0.1
    assert abs(masked_view["uint64_top_bits_agree"] - 0.5) < 0.02 and plain_view["uint64_top_bits_agree"] == 1.0


def test_graded_view_pairs_each_observed_row_with_its_true_label():
    steps, observe = graded_view({"u1": 1, "u2": 0, "u3": 1}, ["u3", "u2", "u1"])

    observe(1, np.array([2, 1]), np.ones((2, 4)))
    observe(2, np.array([0]), np.zeros((1, 4)))

    assert [labels.tolist() for labels, _ in steps] == [[1, 0], [1]]
    assert [grads.shape for _, grads in steps] == [(2, 4), (1, 4)]


def test_latents_that_are_a_linear_map_of_the_features_give_them_away():
    # Arrange: latents an invertible linear map of 2 features (plus an offset)
    from securefl.runtime.leakage import feature_reconstruction

    rng = np.random.default_rng(0)
    features = rng.normal(size=(400, 3))
    latents = features[:, :2] @ np.array([[2.0, 1.0], [-1.0, 3.0]]) + 5.0
    # Act
    two = feature_reconstruction(latents, features[:, :2], known=0.1, seed=1)
    noise = feature_reconstruction(rng.normal(size=(400, 2)), features, known=0.5, seed=1)
    # Assert: the map inverts exactly; unrelated latents explain nothing
    assert two["r2"] == pytest.approx(1.0, abs=1e-5) and (two["known_rows"], two["scored_rows"]) == (40, 360)
    assert 0.0 <= noise["r2"] < 0.02 and -0.05 < noise["r2_unfloored"] <= noise["r2"]
    assert len(noise["r2_per_feature"]) == 3


def test_a_feature_the_fit_gets_worse_than_its_mean_counts_as_zero_not_below():
    # Arrange: feature 0 is pure noise with one huge outlier among the rows to score; feature 1
    # is the latent itself
    from securefl.runtime.leakage import feature_reconstruction

    rng = np.random.default_rng(2)
    latents = rng.normal(size=(200, 1))
    noise = rng.normal(size=200)
    features = np.column_stack([noise, latents[:, 0]])
    # Act
    out = feature_reconstruction(latents, features, known=0.5, seed=0)
    # Assert: the mean floors each feature at 0, so the exact feature keeps its weight
    per = out["r2_per_feature"]
    assert per[1] == pytest.approx(1.0, abs=1e-6) and per[0] < 0
    assert out["r2"] == pytest.approx((max(per[0], 0.0) + per[1]) / 2) == pytest.approx(0.5, abs=1e-6)
    assert out["r2_unfloored"] == pytest.approx(sum(per) / 2)


@pytest.mark.parametrize("latents, features, known, message", [
    (np.zeros((10, 2)), np.zeros((9, 2)), 0.5, "one row each"),
    (np.zeros((10, 2)), np.zeros((10, 2)), 1.0, "strictly between 0 and 1"),
    (np.zeros((10, 2)), np.zeros((10, 2)), 0.05, "fewer than 2 rows"),
])
def test_feature_reconstruction_refuses_bad_input(latents, features, known, message):
    from securefl.runtime.leakage import feature_reconstruction

    with pytest.raises(InputError, match=message):
        feature_reconstruction(latents, features, known=known, seed=0)
