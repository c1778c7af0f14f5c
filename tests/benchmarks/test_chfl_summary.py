"""The CHFL benchmark's summaries: each client's learning-rate choice across runs."""

import pytest

from benchmarks.chfl_jobs import Job
from benchmarks.chfl_summary import tune_lr


def _tuned_out(lr, vals, tests, split=0):
    """One Table II output at ``lr`` with two clients' (validation, test) for the Common method."""
    job = Job("table2", "covertype", 2, 0.3, split, 0, ("chfl",), 3, lr=lr)
    selected = {c: {"variant": "common", "round": 1, "val": v, "last_round_test": t}
                for c, v, t in zip(("c0", "c1"), vals, tests)}
    return {"job": job.__dict__, "accuracy": {"common": sum(tests) / 2},
            "clients": {"common": dict(zip(selected, tests))},
            "selected": {"common": selected}, "last_round_accuracy": {"common": 0.0}, "seconds": 1.0}


def test_each_client_keeps_the_learning_rate_its_validation_rows_prefer():
    # Arrange: c0's validation ties between lr 1e-3 and 1e-4 (listed last), so the smaller, 1e-4, wins
    # (test 0.3); c1's validation prefers 3e-3 (test 0.9)
    runs = [_tuned_out(1e-3, (0.8, 0.2), (0.5, 0.1)), _tuned_out(3e-3, (0.7, 0.6), (0.99, 0.9)),
            _tuned_out(1e-4, (0.8, 0.1), (0.3, 0.2)), _tuned_out(1e-3, (0.5, 0.5), (0.7, 0.7), split=1)]
    # Act
    tuned = tune_lr(runs)
    # Assert: split 0 combines three runs per client; split 1 (one lr) passes through untouched
    assert len(tuned) == 2 and tuned[1] is runs[3]
    combined = tuned[0]
    assert combined["job"]["lr"] == [1e-4, 1e-3, 3e-3]
    assert {c: s["lr"] for c, s in combined["selected"]["common"].items()} == {"c0": 1e-4, "c1": 3e-3}
    assert combined["clients"]["common"] == {"c0": 0.3, "c1": 0.9}
    assert combined["accuracy"]["common"] == pytest.approx(0.6)
    assert combined["seconds"] == 3.0
