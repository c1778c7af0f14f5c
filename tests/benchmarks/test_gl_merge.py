"""GL benchmark --merge: which seeds count as done, and provenance of files written before --merge."""

import argparse

import pytest

from benchmarks.gl import complete_seeds, run_dataset, upgrade


def _run(method, seed):
    return {"method": method, "seed": seed}


def test_a_seed_is_complete_only_when_every_method_ran():
    # Arrange: heart runs gl, fedavg and local; seed 1 lacks local
    runs = [_run(m, 0) for m in ("gl", "fedavg", "local")] + [_run("gl", 1), _run("fedavg", 1)]
    # Act / Assert
    assert complete_seeds(runs, "gl_heart") == {0}


def test_covertype_needs_centralized_too():
    runs = [_run(m, 8) for m in ("gl", "fedavg", "local")]
    assert complete_seeds(runs, "gl_covertype") == set()


def test_upgrade_gives_old_datasets_their_header_as_provenance():
    # Arrange: a file written before --merge existed (no runs_from)
    old = {"date": "d", "commit": "c", "device": {"device": "cpu"}, "command": "python -m benchmarks.gl",
           "datasets": {"gl_heart": {"seeds": [0, 1], "seconds": 12.0, "runs": []}}}
    # Act
    up = upgrade(old)
    # Assert
    assert up["gl_heart"]["runs_from"] == [{"date": "d", "commit": "c", "device": {"device": "cpu"},
                                            "command": "python -m benchmarks.gl", "seeds": [0, 1], "seconds": 12.0}]


def test_upgrade_keeps_existing_provenance():
    prov = [{"date": "d1", "commit": "c1", "device": None, "command": "x", "seeds": [8], "seconds": 1.0}]
    old = {"datasets": {"gl_covertype": {"seeds": [8], "runs": [], "runs_from": prov}}}
    assert upgrade(old)["gl_covertype"]["runs_from"] == prov


def test_merge_refuses_results_run_with_other_settings(tmp_path):
    # Arrange: a previous covertype result whose settings differ from the paper configuration
    args = argparse.Namespace(quick=False, device="cpu", json=tmp_path / "gl.json", workers=1, data_dir=None)
    previous = {"settings": {"epochs": 3}, "runs": [], "runs_from": []}
    # Act / Assert: nothing runs; the error names the dataset and the file
    with pytest.raises(SystemExit, match="gl_covertype settings in .*gl.json differ"):
        run_dataset("gl_covertype", [8], args, {}, previous)
