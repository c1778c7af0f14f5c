"""Per-client learning-rate choice for CHFL: known answers, then whole runs against their parts."""

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.algorithms.chfl import CHFLConfig, run_chfl_method
from securefl.algorithms.chfl_tuning import check_lrs, choose_lr, run_chfl_tuned
from securefl.data.chfl_sets import TabularDataset, chfl_partition


def _summary(method, vals, tests):
    """One run's summary of ``method`` for clients c0, c1 with their (validation, test) accuracy."""
    selected = {c: {"variant": method, "round": 1, "val": v, "last_round_test": t / 2}
                for c, v, t in zip(("c0", "c1"), vals, tests)}
    return {method: {"accuracy": sum(tests) / 2, "clients": dict(zip(selected, tests)), "selected": selected}}


def test_each_client_keeps_the_rate_its_validation_rows_prefer_and_ties_go_to_the_smaller():
    # Arrange: c0 ties at 0.8 between 1e-3 and 1e-4 (1e-4 wins, test 0.3); c1 prefers 3e-3 (test 0.9)
    runs = [(1e-3, _summary("common", (0.8, 0.2), (0.5, 0.1))), (3e-3, _summary("common", (0.7, 0.6), (0.99, 0.9))),
            (1e-4, _summary("common", (0.8, 0.1), (0.3, 0.2)))]
    # Act
    chosen = choose_lr(runs)["common"]
    # Assert: test accuracy never decides, validation does
    assert {c: s["lr"] for c, s in chosen["selected"].items()} == {"c0": 1e-4, "c1": 3e-3}
    assert chosen["clients"] == {"c0": 0.3, "c1": 0.9}
    assert chosen["accuracy"] == pytest.approx(0.6)
    assert chosen["accuracy_std_clients"] == pytest.approx(0.3)
    assert chosen["last_round_accuracy"] == pytest.approx(0.3)


def test_a_method_missing_from_one_run_is_left_out():
    runs = [(1e-3, {**_summary("common", (0.5, 0.5), (0.5, 0.5)), **_summary("chfl", (0.6, 0.6), (0.6, 0.6))}),
            (3e-3, _summary("common", (0.4, 0.4), (0.4, 0.4)))]

    assert set(choose_lr(runs)) == {"common"}


@pytest.mark.parametrize("bad", [(), (0.001, 0.001), (0.0,), (-1e-3,), (float("nan"),), (True,), ("0.1",)])
def test_bad_learning_rate_grids_are_input_errors_naming_lrs(bad):
    with pytest.raises(InputError, match="lrs"):
        check_lrs(bad)


def test_grids_come_back_ascending():
    assert check_lrs([3e-3, 1e-4, 1e-3]) == (1e-4, 1e-3, 3e-3)


def _partition():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(180, 8))
    y = (x[:, :3].sum(1) - x[:, 6] > 0).astype(int)
    ds = TabularDataset("toy", x, y, tuple(f"f{i}" for i in range(8)), ("a", "b"))
    return chfl_partition(ds, n_clients=2, common_ratio=0.25, feature_seed=1, sample_seed=2)


def _config():
    return CHFLConfig(rounds=2, local_epochs=1, batch_size=16, hidden=(6, 4), mus=(1.0,))


def test_a_tuned_run_keeps_for_every_client_the_best_validated_of_its_runs():
    # Arrange
    partition, lrs = _partition(), (1e-3, 3e-2)
    # Act
    ticks = []
    result = run_chfl_tuned("chfl", partition, _config(), lrs=lrs, secure_agg=False,
                            progress=lambda done, total: ticks.append((done, total)))
    # Assert: each client's choice is the run (of the two recorded) whose model it validates best
    runs = {r["lr"]: r["methods"] for r in result["runs"]}
    assert sorted(runs) == list(lrs) and result["settings"]["lr"] == list(lrs)
    for method, summary in result["methods"].items():
        for client, pick in summary["selected"].items():
            best = max(runs[lr][method]["selected"][client]["val"] for lr in lrs)
            assert pick["val"] == best
            assert summary["clients"][client] == runs[pick["lr"]][method]["clients"][client]
    assert result["metrics"]["accuracy"] == result["methods"]["chfl"]["accuracy"]
    assert result["chosen_lr"] == {c: s["lr"] for c, s in result["methods"]["chfl"]["selected"].items()}
    assert result["bytes"] == sum(r["bytes"] for r in result["runs"]) > 0
    assert ticks[-1] == (4, 4) and [d for d, _ in ticks] == sorted(d for d, _ in ticks)


def test_one_rate_gives_the_plain_run():
    # Arrange
    partition = _partition()
    # Act
    tuned = run_chfl_tuned("local", partition, _config(), lrs=(1e-3,))
    plain = run_chfl_method("local", partition, _config())
    # Assert
    assert tuned["metrics"]["clients"] == plain["metrics"]["clients"]
    assert set(tuned["chosen_lr"].values()) == {1e-3}


def test_an_unknown_method_is_refused_before_any_run():
    with pytest.raises(InputError, match="method"):
        run_chfl_tuned("fedprox", _partition(), _config(), lrs=(1e-3,))
