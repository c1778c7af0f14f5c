"""TDCD: Algorithm 1 against plain references, what each party receives, learning, bad input."""

from dataclasses import replace

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.algorithms.tdcd import TDCDConfig, draw_batches
from securefl.algorithms.tdcd_hub import run_tdcd
from securefl.data.tdcd_sets import TieredTable, joined_training, tiered_split

CONFIG = TDCDConfig(rounds=6, local_steps=3, batch_size=8, lr=0.05, l2=0.01, seed=2)


def _regression_table(rows=120, features=7, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    y = x @ rng.normal(size=features) + 0.1 * rng.normal(size=rows)
    return TieredTable("synthetic", "regression", x, y)


def _objective(blocks, y, thetas, l2):
    pred = sum(b @ t for b, t in zip(blocks, thetas))
    return 0.5 * np.mean((pred - y) ** 2) + 0.5 * l2 * sum(t @ t for t in thetas)


def _reference(split, config):
    """Algorithm 1 for the linear model, written out directly in float64."""
    blocks, y = joined_training(split)
    clients = len(split.layouts[0].clients)
    local = [[np.zeros(b.shape[1]) for _ in range(clients)] for b in blocks]
    history = []
    for rnd in range(config.rounds + 1):
        thetas = [np.mean(silo, axis=0) for silo in local]
        history.append(_objective(blocks, y, thetas, config.l2))
        if rnd == config.rounds:
            return history
        batches = draw_batches(config, rnd, split.n_train, clients)
        contributions = [b @ t for b, t in zip(blocks, thetas)]
        for j, layout in enumerate(split.layouts):
            stale = sum(contributions) - contributions[j]
            for k, rows in enumerate(layout.train_rows):
                theta = thetas[j].copy()
                for batch in batches:
                    mine = batch[np.isin(batch, rows)]
                    grad = config.l2 * theta
                    if mine.size:
                        residual = blocks[j][mine] @ theta + stale[mine] - y[mine]
                        grad = grad + blocks[j][mine].T @ residual / mine.size
                    theta = theta - config.lr * grad
                local[j][k] = theta


@pytest.mark.parametrize("secure, silos", [(False, 3), (True, 3), (True, 1)])
def test_the_federation_follows_algorithm_1_written_out_in_plain(secure, silos):
    # Arrange: one silo is the degenerate case, local SGD with periodic averaging
    split = tiered_split(_regression_table(), silos=silos, clients=2, seed=1)
    config = replace(CONFIG, secure=secure)
    # Act
    result = run_tdcd(split, config)
    # Assert: the objective after every averaging equals the reference's (float32 Phi, fixed-point sums)
    ours = [h["objective"] for h in result["history"]]
    np.testing.assert_allclose(ours, _reference(split, config), rtol=2e-4)
    assert ours[-1] < 0.5 * ours[0]


def test_one_client_per_silo_and_one_local_step_is_minibatch_sgd_on_the_whole_model():
    # Arrange: with Q = 1 and K = 1 every silo steps on the full gradient's block at fresh Phi
    split = tiered_split(_regression_table(seed=4), silos=2, clients=1, seed=0)
    config = replace(CONFIG, local_steps=1, rounds=8)
    blocks, y = joined_training(split)
    x = np.hstack(blocks)
    theta, expected = np.zeros(x.shape[1]), []
    for rnd in range(config.rounds + 1):
        expected.append(0.5 * np.mean((x @ theta - y) ** 2) + 0.5 * config.l2 * theta @ theta)
        if rnd < config.rounds:
            (batch,) = draw_batches(config, rnd, split.n_train, 1)
            theta = theta - config.lr * (x[batch].T @ (x[batch] @ theta - y[batch]) / batch.size + config.l2 * theta)
    # Act
    result = run_tdcd(split, config)
    # Assert
    np.testing.assert_allclose([h["objective"] for h in result["history"]], expected, rtol=1e-4)


def _received_arrays(run_logs, party):
    return [(m.src, m.tag.stage, v) for m in run_logs[party] for v in m.fields.values() if isinstance(v, np.ndarray)]


def test_parties_receive_only_phi_masked_sums_and_their_own_silos_average():
    # Arrange
    split = tiered_split(_regression_table(), silos=2, clients=2, seed=0)
    # Act
    logs = run_tdcd(split, CONFIG, record=True)["logs"]
    # Assert: a hub's only floats are Phi (one value per row) and, from the other hub, its silo's
    # squared weight norm (the objective's penalty); weights reach it as masked words
    for hub in ("hub0", "hub1"):
        received = _received_arrays(logs, hub)
        assert any(value.dtype == np.uint64 for _, _, value in received)
        for src, stage, value in received:
            phi = value.ndim == 2 and value.shape[1] == 1
            norm = src.startswith("hub") and stage.startswith("eval-") and value.shape == (1,)
            assert value.dtype.kind != "f" or phi or norm, (hub, src, stage)
    # a client gets Phi rows, its minibatch plan and its own silo's average (its own model's length)
    for j, shards in enumerate(split.shards):
        width = shards[0].x_train.shape[1]
        for shard in shards:
            for src, stage, value in _received_arrays(logs, shard.name):
                assert src in (f"hub{j}", *(s.name for s in shards)), src
                if value.dtype.kind == "f" and value.ndim == 1:
                    assert value.size == width and stage == "fedavg"
                elif value.dtype.kind == "f":
                    assert value.shape[1] == 1
                    assert value.shape[0] <= len(shard.y_train) + len(shard.y_test)


def test_a_hub_can_solve_for_its_clients_features_from_their_phi_and_the_average_it_computes():
    # Arrange: Algorithm 1 has the hub form its silo's average and collect Phi = x . average for
    # every training row at each evaluation; after about as many rounds as the silo has columns
    # that is a linear system in the clients' (standardised) features
    split = tiered_split(_regression_table(), silos=2, clients=3, seed=1)
    logs = run_tdcd(split, replace(CONFIG, rounds=10, secure=True), record=True)["logs"]
    averages = {m.tag.round: m["x"].astype(np.float64) for m in logs["silo0-client0"]
                if m.src == "hub0" and m.tag.stage == "fedavg" and m.tag.name == "average"}  # what hub0 sent
    for shard in split.shards[0]:
        phi = {m.tag.round: m["phi"][:, 0] for m in logs["hub0"]  # what hub0's transport delivered
               if m.src == shard.name and m.tag.stage == "eval-train" and m.tag.name == "phi"}
        rounds = sorted(set(averages) & set(phi))[1:]  # round 0's model is all zeros
        # Act: least squares, rounds x columns against rounds x rows
        guess = np.linalg.lstsq(np.stack([averages[r] for r in rounds]), np.stack([phi[r] for r in rounds]),
                                rcond=None)[0].T
        # Assert: every feature of every row, to float32's precision (README: what each party learns)
        assert np.abs(guess - shard.x_train).max() < 1e-3, shard.name


def test_a_hub_can_solve_for_its_clients_labels_from_their_evaluation_losses():
    # Arrange: at each evaluation a hub holds every training row's prediction (its clients' Phi plus
    # the other silos' sum) and each client reports its loss sum, sum 1/2 (p - y)^2: one equation per
    # evaluation, linear in the client's labels and sum y^2. The predictions span the features' columns,
    # so the hub learns the labels' projection onto them: every label once a client has no more rows
    # than features, as here (the docs said "never a label"; README: what each party learns)
    split = tiered_split(_regression_table(rows=40, features=40), silos=2, clients=2, seed=0)
    logs = run_tdcd(split, replace(CONFIG, rounds=40, secure=True), record=True)["logs"]["hub0"]

    def delivered(src, name):  # what hub0's transport delivered, by round
        return {m.tag.round: m for m in logs if m.src == src and m.tag.stage == "eval-train" and m.tag.name == name}

    others = {r: m["phi"][:, 0].astype(np.float64) for r, m in delivered("hub1", "exchange").items()}
    for k, client in enumerate(split.layouts[0].clients):
        rows = split.layouts[0].train_rows[k]
        own = {r: m["phi"][:, 0].astype(np.float64) for r, m in delivered(client, "phi").items()}
        losses = {r: float(m["loss"]) for r, m in delivered(client, "loss").items()}
        preds = [own[r] + others[r][rows] for r in sorted(losses)]
        # Act: 2 loss = p.p - 2 p.y + y.y, least squares in (y, y.y)
        system = np.array([np.concatenate([-2 * p, [1.0]]) for p in preds])
        target = np.array([2 * losses[r] - p @ p for r, p in zip(sorted(losses), preds)])
        guess = np.linalg.lstsq(system, target, rcond=None)[0][:-1]
        # Assert
        assert len(preds) > len(rows) + 1
        assert np.abs(guess - split.shards[0][k].y_train).max() < 1e-2, client


@pytest.mark.parametrize("secure", [True, False])
def test_with_three_silos_a_hub_reads_no_other_silos_phi_unless_masking_is_off(secure):
    # Arrange
    split = tiered_split(_regression_table(), silos=3, clients=2, seed=0)
    # Act
    result = run_tdcd(split, replace(CONFIG, secure=secure), record=True)
    logs = result["logs"]
    # Assert: what hub0 got from the other hubs: masked words (secure) or their Phi in clear
    assert result["settings"]["hub_exchange"] == ("masked peer sum" if secure else "clear")
    from_hubs = [(m.tag.name, v) for m in logs["hub0"] if m.src in ("hub1", "hub2")
                 for v in m.fields.values() if isinstance(v, np.ndarray)]
    exchanged = [v for name, v in from_hubs if name in ("exchange", "norm")]
    assert exchanged
    if secure:  # the squared norms of the objective go through the peer sum too
        assert all(v.dtype == np.uint64 for v in exchanged)
    else:
        assert any(v.dtype == np.float32 and v.ndim == 2 for v in exchanged)


def test_a_small_cnn_per_silo_learns_to_classify_images_split_down_the_middle():
    # Arrange: class = which half holds the bright bar, so neither silo alone can tell
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=160)
    images = rng.integers(0, 40, size=(160, 8, 8)).astype(np.uint8)
    for i, label in enumerate(y):
        images[i, 2:6, 1 + 4 * label:3 + 4 * label] = 255
    split = tiered_split(TieredTable("bars", "classification", images, y, n_classes=2), silos=2, clients=2, seed=0)
    config = TDCDConfig(rounds=8, local_steps=4, batch_size=16, lr=0.05, l2=0.0, eval_every=0, seed=1)
    # Act
    result = run_tdcd(split, config)
    # Assert
    assert result["metrics"]["accuracy"] > 0.85
    assert len(result["history"]) == 1 and result["bytes_by_purpose"]["training"] > 0


def test_the_torch_backend_gives_the_in_process_result():
    # Arrange
    split = tiered_split(_regression_table(rows=60), silos=2, clients=1, seed=0)
    config = replace(CONFIG, rounds=3)
    # Act
    here, there = run_tdcd(split, config), run_tdcd(split, config, backend="torch")
    # Assert
    assert [h["objective"] for h in there["history"]] == pytest.approx([h["objective"] for h in here["history"]])
    assert there["bytes"] == here["bytes"]


@pytest.mark.parametrize("kwargs, message", [
    ({"rounds": 0}, "rounds must be a positive int"),
    ({"local_steps": 1.5}, "local_steps must be a positive int"),
    ({"lr": -1.0}, "lr must be a positive finite number"),
    ({"lr": float("inf")}, "lr must be a positive finite number"),
    ({"l2": -0.1}, "l2 must be a finite number >= 0"),
    ({"l2": float("nan")}, "l2 must be a finite number >= 0"),
    ({"eval_every": -1}, "eval_every must be an int >= 0"),
    ({"device": "gpu"}, "device must be 'cpu', 'cuda' or 'cuda:N'"),
    ({"threads": 0}, "threads must be a positive int or None"),
    ({"stage_timeout": "10"}, "stage_timeout must be a positive finite number"),
    ({"progress": "bar"}, "progress must be callable"),
    ({"secure": 1}, "secure must be a bool"),
])
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        TDCDConfig(**kwargs)


@pytest.mark.parametrize("secure, lr, message", [
    (True, 3.0, "weights to average reach .* too large for secure aggregation's fixed point .*diverged"),
    (False, 1e6, "the eval-train loss is not finite .*diverged; a lower learning rate may help"),
])
def test_a_diverging_run_says_so(secure, lr, message):
    # before: "lower scale_bits or clip the values" (no option of a run), or "field 'loss' holds a
    # non-finite float; send it as an array" (the codec's complaint, not the cause)
    split = tiered_split(_regression_table(), silos=2, clients=2, seed=0)

    with pytest.raises(InputError, match=message):
        run_tdcd(split, replace(CONFIG, rounds=40, lr=lr, secure=secure))


def test_clients_of_a_silo_built_at_once_in_threads_start_from_the_same_weights():
    # Arrange: clients are threads of one process; a seeded global RNG would race between them
    import threading

    import torch

    from securefl.algorithms.tdcd import build_silo_model

    split = tiered_split(TieredTable("img", "classification", np.zeros((40, 8, 8), np.uint8),
                                     np.zeros(40, np.int64), 2), silos=2, clients=2, seed=0)
    models = [None] * 8

    def build(i):
        models[i] = build_silo_model(split.shards[1][i % 2], task="classification", n_classes=2, seed=5)

    # Act
    threads = [threading.Thread(target=build, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Assert
    first = list(models[0].parameters())
    for model in models[1:]:
        assert all(torch.equal(a, b) for a, b in zip(first, model.parameters()))
    other = build_silo_model(split.shards[0][0], task="classification", n_classes=2, seed=5)
    assert not torch.equal(next(other.parameters()), first[0])


@pytest.mark.parametrize("rows, counts", [
    (np.array([0.5, 1.0]), np.array([1, 1])),          # not indices
    (np.array([0, 999]), np.array([1, 1])),            # a row the client does not hold
    (np.array([0, 1]), np.array([1, 1, 0])),           # more steps than Q
    (np.array([0, 1]), np.array([3, -1])),             # a negative count
])
def test_a_malformed_minibatch_plan_from_the_hub_stops_the_client(rows, counts):
    # Arrange: a hub that averages once, then sends a plan the client must not trust
    from protocols.codec import Tag
    from protocols.errors import ProtocolError
    from protocols.transport import run_parties
    from securefl.algorithms.tdcd import STAGE, tdcd_client
    from securefl.runtime.federated import server_average

    split = tiered_split(_regression_table(rows=40), silos=1, clients=1, seed=0)
    config = TDCDConfig(rounds=1, local_steps=2, batch_size=4, eval_every=0)

    def hub(transport):
        server_average(transport, clients=["c"], config=config.secagg(1), round=0)
        transport.send("c", Tag(0, STAGE, "batches"), rows=rows, counts=counts)
        transport.recv("c", Tag(0, STAGE, "phi"))

    shard = split.shards[0][0]
    # Act / Assert
    with pytest.raises(ProtocolError, match="minibatch plan from 'hub' is malformed"):
        run_parties({"hub": hub, "c": tdcd_client}, timeout=10,
                    kwargs={"c": {"hub": "hub", "shard": shard, "task": "regression", "n_classes": 0, "clients": 1,
                                  "config": config}})
