"""GLConfig.select: which epoch's weights a GL-family client is evaluated with."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from protocols.errors import InputError
from securefl.algorithms.gl import GLConfig, check_clients, run_federated
from securefl.algorithms.gl_select import EpochPicker, validation_loss
from securefl.data.gl_sets import ClientData
from securefl.models.tabular import TabularShape

TINY = TabularShape(embed_dim=8, heads=2, blocks=1, ff_dim=8, width=12, gff_hidden=3, head_width=6)
CONFIG = GLConfig(epochs=4, batches=2, shape=TINY, seed=3)


def _client(name, n, n_features, n_classes, seed, *, validation=10):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + 12 + validation, n_features)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (n_classes > 2) * (x[:, 1] > 0.5).astype(np.int64)
    return ClientData(name, x[:n], y[:n], x[n:n + 12], y[n:n + 12], tuple(f"f{i}" for i in range(n_features)),
                      tuple(range(n_classes)), x_val=x[n + 12:] if validation else None,
                      y_val=y[n + 12:] if validation else None)


CLIENTS = (_client("a", 40, 4, 2, 0), _client("b", 30, 6, 3, 1), _client("c", 24, 3, 2, 2))


def test_validation_loss_is_the_mean_cross_entropy():
    # Arrange: one binary column (P(class 1)), and three class columns
    binary, labels = np.array([0.9, 0.2]), np.array([1, 0])
    three = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    # Act / Assert
    assert validation_loss(labels, binary) == pytest.approx(-(np.log(0.9) + np.log(0.8)) / 2)
    assert validation_loss(np.array([0, 2]), three) == pytest.approx(-(np.log(0.7) + np.log(0.8)) / 2)


def test_the_picker_keeps_the_best_epochs_state_and_prefers_the_later_of_a_tie():
    # Arrange: a one-weight model whose weight is the epoch, and scripted validation probabilities
    # that put q on every row's true class, so the validation loss is -log(q)
    data = _client("a", 40, 4, 2, 0)
    model = torch.nn.Linear(1, 1)
    picker = EpochPicker("val_loss", data, torch.device("cpu"))
    q_by_epoch = {1: 0.6, 2: 0.9, 3: 0.7, 4: 0.9, 5: 0.8}
    # Act
    for epoch, q in q_by_epoch.items():
        with torch.no_grad():
            model.weight.fill_(epoch)
        probs = np.where(data.y_val == 1, q, 1.0 - q)
        picker.see(model, epoch, lambda _model, _x, p=probs: p)
    picked = picker.restore(model, epochs=5)
    # Assert: epochs 2 and 4 tie for the lowest loss; the later one is kept, with its weights
    assert picked == 4 and model.weight.item() == 4.0
    assert picker.history == pytest.approx([-np.log(q) for q in q_by_epoch.values()])


def test_last_needs_no_validation_rows_and_changes_nothing():
    # Arrange
    data = _client("a", 40, 4, 2, 0, validation=0)
    model = torch.nn.Linear(1, 1)
    before = model.weight.item()
    picker = EpochPicker("last", data, torch.device("cpu"))
    # Act
    picker.see(model, 1, lambda *_: pytest.fail("'last' must not score anything"))
    # Assert
    assert picker.restore(model, epochs=7) == 7 and model.weight.item() == before and picker.history == []


@pytest.mark.parametrize("select", ["val_loss", "val_auroc"])
def test_a_client_without_validation_rows_is_refused_before_any_party_starts(select):
    clients = (CLIENTS[0], _client("b", 30, 6, 3, 1, validation=0))

    with pytest.raises(InputError, match=f"client 'b' has no validation rows, which select='{select}' needs"):
        check_clients(clients, replace(CONFIG, select=select))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"select": "best"}, "GLConfig.select must be one of"),
    ({"select": "val_loss", "final_average": True}, "needs final_average=False"),
])
def test_bad_select_settings_name_the_field(kwargs, message):
    with pytest.raises(InputError, match=message):
        replace(CONFIG, **kwargs)


@pytest.mark.parametrize("scope", ["global", "none"])
def test_selection_scores_the_kept_epoch_and_leaves_training_unchanged(scope):
    # Arrange / Act: the same run evaluated at its last epoch and at its best validation epoch
    last = run_federated(CLIENTS, CONFIG, scope=scope)
    picked = run_federated(CLIENTS, replace(CONFIG, select="val_loss"), scope=scope)
    # Assert: one training trajectory (the last round's federated layers are equal), and each
    # client reports the epoch of its lowest validation loss (ties: the later) and that epoch's scores
    for a, b in zip(last["clients"], picked["clients"]):
        losses = b["validation"]["val_loss"]
        best = max(e for e, v in enumerate(losses, 1) if v == min(losses))
        assert len(losses) == CONFIG.epochs and b["selected_epoch"] == best
        assert a["selected_epoch"] == CONFIG.epochs and "validation" not in a
        if scope == "global":
            np.testing.assert_array_equal(a["federated_values"], b["federated_values"])
        if best == CONFIG.epochs:
            assert a["metrics"] == b["metrics"]
