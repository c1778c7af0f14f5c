import json
import math

import pytest

from benchmarks.gl_compare import differing_settings, main, paired_differences, summarise


def _run(method, seed, **clients):
    return {"method": method, "seed": seed,
            "metrics": {"clients": {c: {"auroc": v, "accuracy": v} for c, v in clients.items()}}}


def test_runs_pair_by_method_and_seed_and_unmatched_ones_are_left_out():
    # Arrange
    a = [_run("gl", 1, x=0.90, y=0.80), _run("gl", 2, x=0.70), _run("local", 1, x=0.5)]
    b = [_run("gl", 1, x=0.85, y=0.82), _run("gl", 3, x=0.10), _run("local", 1, y=0.5)]
    # Act
    diffs = paired_differences(a, b, "auroc")
    # Assert: seed 2 and 3 have no partner; local shares no client
    assert diffs.keys() == {"gl"} and diffs["gl"].keys() == {1}
    assert diffs["gl"][1] == pytest.approx([5.0, -2.0])


def test_a_null_score_on_either_side_is_left_out():
    a, b = [_run("gl", 0, x=None, y=0.6)], [_run("gl", 0, x=0.5, y=0.5)]
    assert paired_differences(a, b, "auroc")["gl"][0] == pytest.approx([10.0])


def test_summary_averages_pairs_and_takes_the_standard_error_over_seed_means():
    # Arrange: seed means 1 and 3 -> SE = stdev([1, 3]) / sqrt(2) = 1
    per_seed = {0: [0.0, 2.0], 1: [3.0, 3.0]}
    # Act
    s = summarise(per_seed)
    # Assert
    assert (s["seeds"], s["pairs"]) == (2, 4)
    assert s["mean"] == pytest.approx(2.0) and s["se"] == pytest.approx(1.0) and s["max_abs"] == 3.0
    assert math.isnan(summarise({0: [1.0]})["se"])


def test_the_device_is_not_a_setting_difference_but_anything_else_is():
    assert differing_settings({"device": "cuda", "lr": 1e-3}, {"device": "cpu", "lr": 1e-3}) == []
    assert differing_settings({"device": "cuda", "lr": 1e-3}, {"lr": 1e-2, "eta": 1}) == ["eta", "lr"]


def _file(path, device, runs):
    path.write_text(json.dumps({"benchmark": "gl", "date": "d", "device": {"device": device, "cpu": "c"},
                                "datasets": {"gl_heart": {"settings": {"device": device}, "runs": runs}}}))
    return path


def test_main_writes_one_table_per_shared_dataset(tmp_path):
    # Arrange
    a = _file(tmp_path / "a.json", "cuda", [_run("gl", 0, x=0.9), _run("gl", 1, x=0.8)])
    b = _file(tmp_path / "b.json", "cpu", [_run("gl", 0, x=0.8), _run("gl", 1, x=0.8)])
    # Act
    main([str(a), str(b), "--markdown", str(tmp_path / "c.md")])
    # Assert: mean of +10 and 0 points over two seeds
    text = (tmp_path / "c.md").read_text()
    assert "## gl_heart" in text and "| gl | auroc | 2 | 2 | +5.00 | 5.00 | 10.00 |" in text
    assert "Settings that differ besides the device: none." in text


def test_a_file_of_another_benchmark_stops_with_one_line(tmp_path):
    a = _file(tmp_path / "a.json", "cuda", [])
    other = tmp_path / "o.json"
    other.write_text(json.dumps({"benchmark": "stfl", "datasets": []}))
    with pytest.raises(SystemExit, match="is not a gl result file"):
        main([str(a), str(other), "--markdown", str(tmp_path / "c.md")])
    assert not (tmp_path / "c.md").exists()
