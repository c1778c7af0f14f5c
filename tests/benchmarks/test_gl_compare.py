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


def _file(path, device, runs, settings=None, **header):
    path.write_text(json.dumps({"benchmark": "gl", "date": "d", "device": {"device": device, "cpu": "c"}, **header,
                                "datasets": {"gl_heart": {"settings": {"device": device, **(settings or {})},
                                                          "runs": runs}}}))
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


def test_markdown_naming_an_input_file_is_a_usage_error_and_the_file_is_kept(tmp_path, capsys):
    # Arrange
    a = _file(tmp_path / "a.json", "cuda", [_run("gl", 0, x=0.9)])
    b = _file(tmp_path / "b.json", "cpu", [_run("gl", 0, x=0.8)])
    before = b.read_text()
    # Act
    with pytest.raises(SystemExit) as stop:
        main([str(a), str(b), "--markdown", str(b)])
    # Assert
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"--markdown {b} would replace argument b {b}" in err and b.read_text() == before


def test_a_file_without_select_ran_last_as_upgrade_reads_it(tmp_path):
    # Arrange: files written before --select existed have no select key: they took the last epoch
    a = _file(tmp_path / "a.json", "cuda", [_run("gl", 0, x=0.9)])
    b = _file(tmp_path / "b.json", "cpu", [_run("gl", 0, x=0.8)],
              {"select": "last", "federate_bn_stats": True, "final_average": True})
    # Act
    main([str(a), str(b), "--markdown", str(tmp_path / "c.md")])
    # Assert
    assert "Settings that differ besides the device: none." in (tmp_path / "c.md").read_text()


def test_each_files_quick_flag_and_commits_are_shown_and_different_code_is_warned_of(tmp_path):
    # Arrange: A is a --quick run at one commit, B a full run whose runs came from two
    a = _file(tmp_path / "a.json", "cuda", [_run("gl", 0, x=0.9)], quick=True, commit="a" * 40)
    b = _file(tmp_path / "b.json", "cpu", [_run("gl", 0, x=0.8)], quick=False, commit="b" * 40)
    stored = json.loads(b.read_text())
    stored["datasets"]["gl_heart"]["runs_from"] = [{"commit": "a" * 40, "seeds": [0]}, {"commit": "c" * 40}]
    b.write_text(json.dumps(stored))
    # Act
    main([str(a), str(b), "--markdown", str(tmp_path / "c.md")])
    # Assert
    text = (tmp_path / "c.md").read_text()
    assert "--quick run" in text and "full run" in text
    assert f"runs from commit `{'a' * 12}`)" in text and f"runs from commits `{'a' * 12}`, `{'c' * 12}`)" in text
    assert f"the two files ran different code**: `{'c' * 12}` only in B." in text


def test_the_same_commit_on_both_sides_gives_no_warning(tmp_path):
    # Arrange
    a = _file(tmp_path / "a.json", "cuda", [_run("gl", 0, x=0.9)], quick=False, commit="a" * 40)
    b = _file(tmp_path / "b.json", "cpu", [_run("gl", 0, x=0.8)], quick=False, commit="a" * 40)
    # Act
    main([str(a), str(b), "--markdown", str(tmp_path / "c.md")])
    # Assert
    assert "different code" not in (tmp_path / "c.md").read_text()
