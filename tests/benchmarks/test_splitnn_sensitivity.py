"""The sensitivity check perturbs only the passive features, by the size asked, and reports the spread."""

import json

import numpy as np
import pytest

from benchmarks import splitnn_sensitivity as bench
from securefl.data import load_vertical, stfl_split


def test_perturbed_moves_passive_features_by_the_relative_jitter_only():
    # Arrange
    split = stfl_split(load_vertical("breast_sklearn"), seed=0)
    before = split.dataset.passive[0].features
    # Act
    after = bench.perturbed(split, 1e-6, draw=3)
    # Assert
    shift = (after.dataset.passive[0].features - before) / before.std(axis=0)
    assert 0.5e-6 < shift.std() < 2e-6 and np.abs(shift).max() < 1e-5
    assert after.dataset.active is split.dataset.active and after.train_ids == split.train_ids
    again = bench.perturbed(split, 1e-6, draw=3).dataset.passive[0].features
    assert np.array_equal(again, after.dataset.passive[0].features)  # seeded by the draw: a run repeats


def test_quick_run_reports_every_draw_and_the_spread(tmp_path):
    # Act
    code = bench.main(["--quick", "--json", str(tmp_path / "s.json")])
    # Assert
    data = json.loads((tmp_path / "s.json").read_text())
    assert code == 0 and data["quick"] is True and len(data["draws"]) == 2
    accs = [d["accuracy"] for d in data["draws"]]
    assert data["summary"]["min"] == min(accs) and data["summary"]["max"] == max(accs)
    assert data["summary"]["max_abs_shift"] == max(abs(a - data["unperturbed"]["accuracy"]) for a in accs)
    assert "| draw 1 |" in (tmp_path / "s.md").read_text()


def test_projection_of_another_cell_stops_before_any_run(tmp_path, capsys):
    # Arrange
    other = tmp_path / "p.json"
    other.write_text(json.dumps({"benchmark": "he_projection", "settings": {"dataset": "breast", "seed": 0,
                                                                            "epochs": 100}, "measured": {}}))
    # Act
    with pytest.raises(SystemExit) as stop:
        bench.main(["--projection", str(other), "--json", str(tmp_path / "s.json")])
    # Assert
    assert "not this cell" in str(stop.value.code)
    assert not (tmp_path / "s.json").exists()


def test_a_quick_run_writes_its_own_file_and_takes_no_size_options():
    # Arrange / Act
    quick = bench.parse_args(["--quick"])
    # Assert: never the committed result's path; sizes are --quick's own
    assert quick.json_path.name == "splitnn_sensitivity.quick.json" and quick.epochs == bench.QUICK["epochs"]
    assert bench.parse_args([]).json_path.name == "splitnn_sensitivity.json"
    with pytest.raises(SystemExit):
        bench.parse_args(["--quick", "--draws", "5"])
