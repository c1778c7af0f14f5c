"""The secure-aggregation benchmark script runs end to end on a tiny setting."""

import json

import pytest

from benchmarks import secagg as bench


def test_tiny_benchmark_writes_json_and_markdown(tmp_path):
    out = tmp_path / "secagg.json"

    code = bench.main(["--quick", "--clients", "3", "--length", "64", "--repeats", "1",
                       "--max-dropouts", "0", "--json", str(out)])

    data = json.loads(out.read_text())
    assert code == 0 and data["quick"] is True
    assert [(r["secure"], r["survivors"]) for r in data["results"]] == [(False, 3), (True, 3)]
    assert data["results"][1]["max_abs_error"] < 1e-6
    text = (tmp_path / "secagg.md").read_text()
    assert "quick run" in text
    # before, 3 x 64 values were judged against the 10 x 1,000,000 target ("met")
    assert "at 3 x 64 (not judged: another size)." in text and "(met)" not in text


@pytest.mark.parametrize("worst, verdict", [(0.4, "(met)."), (1.5, "(NOT met).")])
def test_the_target_is_judged_at_its_own_size(worst, verdict):
    line = bench._target_line({"added_seconds_max": 1.0, "worst_added_seconds": worst}
                              | {"met": worst < 1.0}, bench.BenchSettings())

    assert line.endswith(verdict) and "10 clients x 1,000,000 values" in line


@pytest.mark.parametrize(("argv", "message"), [
    (["--clients", "1"], "need --clients >= 2"),
    (["--max-dropouts", "9"], "--max-dropouts must leave a majority of the 10 clients"),
    (["--stage-timeout", "-1"], "stage_timeout must be a positive number of seconds"),
    (["--stage-timeout", "nan"], "stage_timeout must be a positive number of seconds"),
    (["--length", "0"], "--length >= 1"),  # not the default's million silently
    (["--repeats", "0"], "--repeats >= 1"),
])
def test_bad_settings_are_usage_errors_before_any_round(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--quick", *argv, "--json", str(tmp_path / "r.json")])

    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_without_json_the_markdown_still_gets_its_json_beside_it(tmp_path, monkeypatch):
    # Arrange: the default place is the results folder (here a temporary one)
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    # Act
    settings, json_path, md_path = bench.parse_args(["--quick"])
    # Assert: the pair goes together, so a run cannot leave a committed secagg.md beside an older JSON
    assert (json_path, md_path) == (tmp_path / "secagg.quick.json", tmp_path / "secagg.quick.md")
