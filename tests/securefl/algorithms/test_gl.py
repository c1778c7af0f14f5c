"""GL: global layers agree after aggregation, only masked global layers leave a client, bad input."""

from dataclasses import replace

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.algorithms.gl import GLConfig, check_clients, run_federated, run_gl
from securefl.data.gl_sets import ClientData
from securefl.models.tabular import TabularShape

TINY = TabularShape(embed_dim=8, heads=2, blocks=1, ff_dim=8, width=12, gff_hidden=3, head_width=6)
# final_average=True: most tests read the state right after an aggregation
CONFIG = GLConfig(epochs=2, batches=2, shape=TINY, seed=3, final_average=True)


def _client(name, n, n_features, n_classes, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n + 12, n_features)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (n_classes > 2) * (x[:, 1] > 0.5).astype(np.int64)
    return ClientData(name, x[:n], y[:n], x[n:], y[n:], tuple(f"f{i}" for i in range(n_features)),
                      tuple(range(n_classes)))


CLIENTS = (_client("a", 40, 4, 2, 0), _client("b", 30, 6, 3, 1), _client("c", 24, 3, 2, 2))


def _client_arrays(run, client):
    return [v for m in run.logs["server"] if m.src == client for v in m.fields.values() if isinstance(v, np.ndarray)]


@pytest.mark.parametrize("aggregate", ["epoch", "batch"])
def test_every_client_ends_with_identical_global_layers(aggregate):
    # Arrange
    config = replace(CONFIG, aggregate=aggregate)
    # Act
    out = run_federated(CLIENTS, config, scope="global")
    # Assert: the last step of a run is an aggregation, so omega is the same everywhere
    values = [c["federated_values"] for c in out["clients"]]
    assert all(np.array_equal(values[0], v) for v in values[1:])
    assert len(out["round_seconds"]) == config.rounds() == (4 if aggregate == "batch" else 2)


def test_secure_and_plain_aggregation_agree_up_to_fixed_point_error():
    # Arrange: one round, so the result is the average itself (later rounds train on from it,
    # and Adam amplifies the 2^-25 rounding a little)
    config = replace(CONFIG, epochs=1)
    # Act
    secure = run_federated(CLIENTS, config, scope="global")
    plain = run_federated(CLIENTS, replace(config, secure=False), scope="global")
    # Assert
    for s, p in zip(secure["clients"], plain["clients"]):
        np.testing.assert_allclose(s["federated_values"], p["federated_values"], atol=1e-6)


def test_only_masked_global_layers_leave_a_client():
    # Arrange
    config = replace(CONFIG, epochs=1)
    # Act
    out = run_federated(CLIENTS, config, scope="global", record=True)
    run = out["run"]
    n_global = out["clients"][0]["federated"]
    # Assert: a client sends only to the server, no float arrays at all (key shares travel
    # encrypted as bytes), and exactly one vector: omega (+ the weight slot) masked in Z_2^64
    for name in ("a", "b", "c"):
        arrays = _client_arrays(run, name)
        vectors = [v for v in arrays if v.ndim == 1]
        assert all(v.dtype.kind in "u" for v in arrays)
        assert len(vectors) == 1 and vectors[0].size == n_global + 1 and vectors[0].dtype == np.uint64
        assert all(m.dst == "server" for party in run.logs.values() for m in party if m.src == name)


def test_one_clients_update_is_not_recoverable_from_the_servers_view():
    # Arrange
    config = replace(CONFIG, epochs=1)
    # Act
    out = run_federated(CLIENTS, config, scope="global", record=True)
    run = out["run"]
    mean = out["clients"][0]["federated_values"]
    views = {c: [v for v in _client_arrays(run, c) if v.ndim == 1][0] for c in ("a", "b", "c")}
    decoded = {c: v[:-1].astype(np.uint64).view(np.int64).astype(np.float64) / 2.0**24 for c, v in views.items()}
    # Assert: a single masked vector decodes to ring noise, nowhere near a model (|omega| ~ 1),
    # while the server still computed the right average from the masked inputs
    for value in decoded.values():
        assert np.median(np.abs(value)) > 1e6
        assert not np.allclose(value, mean, atol=1.0)
    assert np.abs(mean).max() < 100


def test_gl_differs_from_local_and_reports_per_client_metrics():
    # Arrange / Act
    result = run_gl(CLIENTS, CONFIG, dataset="toy")
    # Assert
    assert result["method"] == "gl" and set(result["metrics"]["clients"]) == {"a", "b", "c"}
    assert 0.0 <= result["metrics"]["auroc"] <= 1.0 and result["bytes"] > 0
    assert result["settings"]["eta"] == 1.0


def test_eta_one_per_batch_trains_exactly_as_per_epoch_aggregation():
    # Arrange: Algorithm 1 with eta = 1 keeps each client's own omega_k after a batch's
    # aggregation; only the broadcast at the start of the next round brings the average
    config = replace(CONFIG, secure=False)
    # Act
    per_epoch = run_federated(CLIENTS, config, scope="global")
    per_batch = run_federated(CLIENTS, replace(config, aggregate="batch"), scope="global")
    # Assert: the same weights and scores, with one average per batch sent instead of per epoch
    for e, b in zip(per_epoch["clients"], per_batch["clients"]):
        np.testing.assert_array_equal(e["federated_values"], b["federated_values"])
        assert e["metrics"] == b["metrics"]
    assert len(per_batch["round_seconds"]) == config.batches * len(per_epoch["round_seconds"])


def test_eta_zero_per_batch_is_fedavg_after_every_step():
    # Arrange / Act: eta = 0 takes the average after every batch, eta = 1 does not
    config = replace(CONFIG, secure=False, aggregate="batch")
    fedavg = run_federated(CLIENTS, replace(config, eta=0.0), scope="global")
    paper = run_federated(CLIENTS, config, scope="global")
    # Assert: the two runs part after the first aggregation
    assert not np.allclose(fedavg["clients"][0]["federated_values"], paper["clients"][0]["federated_values"])


def test_aggregate_blends_as_algorithm_1_writes_it():
    # Arrange: two clients whose one federated tensor holds 0 and 4, so the average is 2
    from protocols.transport import run_parties
    from securefl.algorithms.gl import aggregate
    from securefl.runtime.federated import averaging_server
    import torch

    config = replace(CONFIG, secure=False, aggregate="batch", eta=0.25)

    def client(transport, *, value):
        own = [torch.full((3,), value)]
        average = aggregate(transport, own, config, 0)
        return own[0].tolist(), average[0].tolist()

    # Act
    run = run_parties({"a": client, "b": client, "server": averaging_server},
                      kwargs={"a": {"value": 0.0}, "b": {"value": 4.0},
                              "server": {"clients": ["a", "b"], "rounds": 1, "config": config.secagg()}})
    # Assert: omega_k <- eta omega_k + (1 - eta) omega, and the average itself is returned
    assert run.results["a"] == ([1.5] * 3, [2.0] * 3)
    assert run.results["b"] == ([2.5] * 3, [2.0] * 3)


def test_eta_with_per_epoch_aggregation_is_refused():
    # Arrange / Act / Assert: the round's broadcast would replace any blend, so eta would do nothing
    with pytest.raises(InputError, match="GLConfig.eta=0.5 would have no effect with aggregate='epoch'"):
        GLConfig(eta=0.5)


@pytest.mark.parametrize("clients, message", [
    ((replace(CLIENTS[0], x_train=CLIENTS[0].x_train[:0], y_train=CLIENTS[0].y_train[:0]), CLIENTS[1]),
     "client 'a' has 0 training rows"),
    ((replace(CLIENTS[0], x_test=CLIENTS[0].x_test[:0], y_test=CLIENTS[0].y_test[:0]), CLIENTS[1]),
     "client 'a' has no test rows"),
    ((CLIENTS[0],), "at least two clients"),
    ((CLIENTS[0], CLIENTS[0]), "unique"),
])
def test_bad_clients_are_one_line_input_errors(clients, message):
    with pytest.raises(InputError, match=message) as info:
        check_clients(clients, CONFIG)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("field, value", [("epochs", 0), ("eta", 1.5), ("aggregate", "round"), ("lr", -1.0),
                                          ("device", "tpu"), ("secure", 1),
                                          ("federate_bn_stats", "no"), ("final_average", None)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(InputError, match=f"GLConfig.{field}"):
        GLConfig(**{field: value})


def test_batch_norm_statistics_are_federated_unless_kept_local():
    # Arrange: one round of GL (omega holds batch-norm layers)
    config = replace(CONFIG, epochs=1)
    # Act
    with_stats = run_federated(CLIENTS, config, scope="global")
    params_only = run_federated(CLIENTS, replace(config, federate_bn_stats=False), scope="global")
    # Assert: the running means and variances (two per batch-norm feature) stay home when asked
    # to, and either way every client ends with the same federated values
    extra = with_stats["clients"][0]["federated"] - params_only["clients"][0]["federated"]
    assert extra > 0 and extra % 2 == 0
    for out in (params_only, with_stats):
        values = [c["federated_values"] for c in out["clients"]]
        assert all(np.array_equal(values[0], v) for v in values[1:])


@pytest.mark.parametrize("aggregate", ["epoch", "batch"])
def test_without_final_average_clients_keep_their_last_round_weights(aggregate):
    # Arrange: plain aggregation, so averages are exact; the same seed trains the same way
    config = replace(CONFIG, aggregate=aggregate, secure=False)
    # Act
    adopted = run_federated(CLIENTS, config, scope="global")
    own = run_federated(CLIENTS, replace(config, final_average=False), scope="global")
    # Assert: one round fewer is sent, the clients end apart, and their mean is exactly the
    # average the clients adopt in a final_average run (training was identical up to then)
    values = [c["federated_values"] for c in own["clients"]]
    assert len(own["round_seconds"]) == len(adopted["round_seconds"]) - 1 == config.rounds() - 1
    assert not np.allclose(values[0], values[1])
    np.testing.assert_allclose(np.mean(values, axis=0), adopted["clients"][0]["federated_values"],
                               rtol=1e-5, atol=1e-6)
