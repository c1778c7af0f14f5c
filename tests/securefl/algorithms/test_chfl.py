"""CHFL over secure aggregation: identical common columns, only masked common columns leave a client."""

import numpy as np
import pytest
import torch

from protocols.errors import InputError
import securefl.algorithms.chfl as chfl
from securefl.algorithms.chfl import CHFLConfig, run_chfl, run_chfl_method
from securefl.algorithms.chfl_local import ClientModels
from securefl.data.chfl_sets import TabularDataset, chfl_partition
from securefl.runtime.federated import flatten

HIDDEN = (6, 4)


def _partition(n_clients=3, rows=150):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 8))
    y = (x[:, :3].sum(1) + x[:, 5] > 0).astype(int) + (x[:, 7] > 1).astype(int)
    ds = TabularDataset("toy", x, y, tuple(f"f{i}" for i in range(8)), ("a", "b", "c"))
    return chfl_partition(ds, n_clients=n_clients, common_ratio=0.25, feature_seed=1, sample_seed=2)


def _config(**kw):
    return CHFLConfig(**{"rounds": 2, "local_epochs": 1, "batch_size": 16, "hidden": HIDDEN, **kw})


def _n_common_params(partition):
    sizes = (len(partition.common_columns), *HIDDEN, partition.n_classes)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def _client_arrays(result, stage):
    """{(sender, round): array} of what clients sent in messages of ``stage``."""
    return {(m.src, m.tag.round): v for log in result["logs"].values() for m in log if m.src != "server"
            for v in m.fields.values() if isinstance(v, np.ndarray) and m.tag.name == stage}


def test_a_model_starts_the_same_whatever_else_the_client_trains():
    # Arrange: the same client with a coarse and a fine mu grid, with and without Local / simple
    client = _partition().clients[0]
    coarse = ClientModels(client, 3, _config(heads=("chfl", "local", "simple"), mus=(0.5, 1.0)), torch.device("cpu"))
    fine = ClientModels(client, 3, _config(heads=("chfl", "local"), mus=(0.1, 0.5, 1.0)), torch.device("cpu"))
    # Act: the initial unique columns of mu = 0, 0.5 and 1 in both, and the Local network
    def column(models, mu):
        at = models.mus.index(mu)
        return [p[at] for p in models.heads["chfl"].parameters()]
    # Assert
    for mu in (0.0, 0.5, 1.0):
        for mine, theirs in zip(column(coarse, mu), column(fine, mu)):
            torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    for mine, theirs in zip(coarse.heads["local"].parameters(), fine.heads["local"].parameters()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    assert not torch.equal(column(coarse, 0.5)[0], column(coarse, 1.0)[0])  # each mu has its own start


def test_local_and_mu0_results_do_not_depend_on_the_mu_grid():
    # Arrange
    partition = _partition()
    # Act
    coarse, fine = (run_chfl(partition, _config(heads=("chfl", "local"), mus=mus), secure_agg=False)["methods"]
                    for mus in ((1.0,), (0.25, 0.5, 1.0)))
    # Assert
    for method in ("common", "local", "chfl_mu0"):
        assert coarse[method]["accuracy"] == fine[method]["accuracy"], method


def test_the_same_seed_gives_the_same_numbers():
    # Arrange: fused Adam (ClientModels) must still be deterministic
    partition = _partition()
    config = _config(heads=("chfl", "local", "simple"))
    # Act
    first, second = (run_chfl(partition, config, secure_agg=False)["methods"] for _ in range(2))
    # Assert
    assert {m: v["clients"] for m, v in first.items()} == {m: v["clients"] for m, v in second.items()}


def test_every_client_starts_from_the_same_common_column_and_all_methods_are_scored():
    # Arrange
    partition = _partition()
    config = _config(heads=("chfl", "local", "simple"))
    # Act
    columns = [flatten(list(ClientModels(c, partition.n_classes, config, torch.device("cpu")).common.parameters()))
               for c in partition.clients]
    result = run_chfl(partition, config, secure_agg=True)
    # Assert
    for other in columns[1:]:
        np.testing.assert_array_equal(columns[0], other)  # theta_c^0
    assert set(result["methods"]) == {"common", "local", "chfl_mu0", "chfl", "simple"}
    assert all(0.0 <= m["accuracy"] <= 1.0 for m in result["methods"].values())
    assert len(result["round_seconds"]) == 2 and len(result["aggregation_seconds"]) == 2
    for name, method in result["methods"].items():  # each choice keeps the validation score it won with
        history = {c["client"]: c["history"] for c in result["clients"]}
        for client, choice in method["selected"].items():
            val = history[client][choice["variant"]]["val"]
            assert choice["val"] == max(val) == val[choice["round"] - 1], (name, client)


def test_common_columns_are_identical_after_aggregation(monkeypatch):
    # Arrange: capture every client's common column right after each average
    seen = {}
    original = chfl.client_average

    def spy(transport, *, tensors, round, **kw):
        original(transport, tensors=tensors, round=round, **kw)
        seen[(transport.name, round)] = flatten(tensors)

    monkeypatch.setattr(chfl, "client_average", spy)
    partition = _partition()
    # Act
    run_chfl(partition, _config(), secure_agg=True)
    # Assert
    for r in range(2):
        vectors = [seen[(c.name, r)] for c in partition.clients]
        for v in vectors[1:]:
            np.testing.assert_array_equal(vectors[0], v)


def test_only_masked_common_columns_leave_a_client():
    # Arrange
    partition = _partition()
    size = _n_common_params(partition) + 1  # the weighted vector plus its weight
    # Act
    result = run_chfl(partition, _config(heads=("chfl", "local", "simple")), secure_agg=True, record=True)
    # Assert: besides byte strings (keys, encrypted Shamir shares: uint8), a client sent only the masked
    # common-column vector, as ring elements; no float array (a model, a prediction) ever left a client
    sent = [(m.tag.name, v) for log in result["logs"].values() for m in log if m.src != "server"
            for v in m.fields.values() if isinstance(v, np.ndarray)]
    numeric = [(name, v) for name, v in sent if v.dtype != np.uint8]
    assert len(numeric) == 3 * 2 and {name for name, _ in numeric} == {"masked"}
    assert all(v.shape == (size,) and v.dtype == np.uint64 for _, v in numeric)
    assert all(m.dst == "server" for log in result["logs"].values() for m in log if m.src != "server")


def test_secure_and_plain_runs_agree_and_a_single_update_is_hidden():
    # Arrange
    partition = _partition()
    # Act
    plain = run_chfl(partition, _config(), secure_agg=False, record=True)
    secure = run_chfl(partition, _config(), secure_agg=True, record=True)
    # Assert: same accuracies (fixed-point error only), and the plain run shows what each client's update was
    for method, values in plain["methods"].items():
        assert secure["methods"][method]["accuracy"] == pytest.approx(values["accuracy"], abs=0.02)
    updates = _client_arrays(plain, "plain")
    masked = _client_arrays(secure, "masked")
    assert len(updates) == len(masked) == 3 * 2
    for key, value in masked.items():
        assert updates[key].dtype == np.float64 and value.dtype == np.uint64
        decoded = value[:-1].astype(np.int64).astype(np.float64) / 2.0**24
        assert not np.allclose(decoded, updates[key][:-1], atol=1e-2)


def test_methods_run_alone_and_local_sends_nothing():
    # Arrange
    partition = _partition()
    # Act
    local = run_chfl_method("local", partition, _config())
    common = run_chfl_method("common", partition, _config(), secure_agg=False)
    # Assert
    assert local["method"] == "local" and local["bytes"] == 0
    assert common["method"] == "common" and common["bytes"] > 0
    assert set(common["metrics"]["clients"]) == {"c0", "c1", "c2"}


@pytest.mark.parametrize("bad, match", [({"mus": (0.0,)}, "mus"), ({"rounds": 0}, "rounds"),
                                        ({"heads": ("nope",)}, "heads"), ({"lr": -1.0}, "lr"),
                                        ({"hidden": 128}, "hidden must be a tuple"),
                                        ({"mus": 0.5}, "mus must be a tuple"), ({"heads": "chfl"}, "heads must be"),
                                        ({"mus": (0.5, 0.5)}, "mus must be distinct"),
                                        ({"mus": (0.1, 0.1000001)}, "mus must be distinct")])
def test_bad_config_is_an_input_error_naming_the_parameter(bad, match):
    with pytest.raises(InputError, match=match):
        CHFLConfig(**bad)


def test_unknown_method_is_an_input_error():
    with pytest.raises(InputError, match="method"):
        run_chfl_method("fedprox", _partition(), _config())


def test_clients_standardise_on_their_own_rows_but_keep_indicator_columns():
    # Arrange: feature 0 is a rare 0/1 indicator, the rest continuous
    partition = _partition()
    client = partition.clients[0]
    client.train.common[:, 0] = 0.0
    client.train.common[:2, 0] = 1.0
    # Act
    models = ClientModels(client, partition.n_classes, _config(), torch.device("cpu"))
    # Assert
    common = models.splits["train"].common.numpy()
    assert sorted(set(common[:, 0].tolist())) == [0.0, 1.0]
    np.testing.assert_allclose(common[:, 1:].mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(common[:, 1:].std(0), 1.0, atol=1e-4)
