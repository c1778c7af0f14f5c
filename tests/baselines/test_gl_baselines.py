"""GL baselines: padded FedAvg, Local, Centralized, and the run_gl_method entry point."""

import numpy as np
import pandas as pd
import pytest

from baselines.gl_baselines import padded_clients, pooled_table, run_gl_method
from protocols.errors import InputError
from securefl.algorithms.gl import GLConfig
from securefl.data.gl_sets import ClientTable, GLDataset
from securefl.models.tabular import TabularShape

TINY = TabularShape(embed_dim=8, heads=2, blocks=1, ff_dim=8, width=12, gff_hidden=3, head_width=6)
CONFIG = GLConfig(epochs=2, batches=2, shape=TINY, seed=1)


def _table(name, columns, classes, n=40, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({c: rng.normal(size=n) for c in columns})
    frame["target"] = rng.choice(classes, n)
    return ClientTable(name, "target", frame.iloc[:28].reset_index(drop=True), frame.iloc[28:].reset_index(drop=True))


TABLES = (_table("a", ["u", "v"], [1, 2], seed=0), _table("b", ["v", "w", "z"], [2, 3, 5], seed=1))
DATASET = GLDataset("toy", TABLES, binary=False)


def test_fedavg_pads_features_to_the_union_and_encodes_labels_globally():
    # Arrange / Act
    clients, n_classes = padded_clients(TABLES)
    # Assert: union u, v, w, z; a's w and z columns are zero; labels index into [1, 2, 3, 5]
    assert n_classes == 4 and all(c.features == ("u", "v", "w", "z") for c in clients)
    assert np.all(clients[0].x_train[:, 2:] == 0.0) and np.any(clients[1].x_train[:, 2:] != 0.0)
    assert set(clients[0].y_train) <= {0, 1} and set(clients[1].y_train) <= {1, 2, 3}


@pytest.mark.parametrize("method", ["gl", "fedavg", "local"])
def test_every_method_returns_the_design_result_object(method):
    # Arrange / Act
    result = run_gl_method(method, DATASET, CONFIG, secure_agg=False)
    # Assert
    assert {"method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings"} <= set(result)
    assert result["method"] == method and set(result["metrics"]["clients"]) == {"a", "b"}
    assert (result["bytes"] == 0) == (method == "local")


def test_fedavg_federates_the_whole_model_and_gl_only_omega():
    # Arrange / Act
    gl = run_gl_method("gl", DATASET, CONFIG)
    fedavg = run_gl_method("fedavg", DATASET, CONFIG)
    # Assert
    a_gl, a_fa = gl["metrics"]["clients"]["a"], fedavg["metrics"]["clients"]["a"]
    assert a_gl["federated_parameters"] < a_gl["parameters"]
    assert a_fa["federated_parameters"] >= a_fa["parameters"]


def test_centralized_needs_shared_columns_or_pooled_files():
    with pytest.raises(InputError, match="same columns at every client"):
        pooled_table(DATASET, TABLES)


def test_centralized_pools_clients_with_the_same_columns():
    # Arrange
    tables = (_table("a", ["u", "v"], [0, 1], seed=0), _table("b", ["u", "v"], [0, 1], seed=1))
    # Act
    result = run_gl_method("centralized", GLDataset("toy", tables, binary=True), CONFIG)
    # Assert
    assert result["method"] == "centralized" and list(result["metrics"]["clients"]) == ["centralized"]


def test_centralized_pools_validation_rows_so_it_can_select_an_epoch():
    # Arrange: each client's first 8 test rows serve as its validation rows
    tables = tuple(ClientTable(t.name, t.label, t.train, t.test.iloc[8:], validation=t.test.iloc[:8])
                   for t in (_table("a", ["u", "v"], [0, 1], seed=0), _table("b", ["u", "v"], [0, 1], seed=1)))
    dataset = GLDataset("toy", tables, binary=True)
    config = GLConfig(epochs=2, batches=2, shape=TINY, seed=1, select="val_loss")
    # Act
    pooled = pooled_table(dataset, tables)
    result = run_gl_method("centralized", dataset, config)
    # Assert
    assert len(pooled.validation) == 16 and len(pooled.test) == 8
    assert result["metrics"]["clients"]["centralized"]["selected_epoch"] in (1, 2)


def test_unknown_method_is_an_input_error():
    with pytest.raises(InputError, match="unknown GL method 'fedprox'"):
        run_gl_method("fedprox", DATASET, CONFIG)
