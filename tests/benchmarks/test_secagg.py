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
    assert "quick run" in (tmp_path / "secagg.md").read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (["--clients", "1"], "need --clients >= 2"),
    (["--max-dropouts", "9"], "--max-dropouts must leave a majority of the 10 clients"),
    (["--stage-timeout", "-1"], "stage_timeout must be a positive number of seconds"),
    (["--stage-timeout", "nan"], "stage_timeout must be a positive number of seconds"),
])
def test_bad_settings_are_usage_errors_before_any_round(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--quick", *argv, "--json", str(tmp_path / "r.json")])

    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
