"""The secure-aggregation benchmark script runs end to end on a tiny setting."""

import json

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
