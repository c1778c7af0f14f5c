"""``securefl demo``: every step runs and its numbers are right."""

import json

import pytest

from securefl.cli import main


@pytest.mark.parametrize("backend", ["ckks", "paillier"])
def test_demo_runs_every_step_and_reports_it(tmp_path, capsys, backend):
    report = tmp_path / "demo.json"

    code = main(["demo", "--he", backend, "--epochs", "0", "--json", str(report)])

    out = capsys.readouterr().out
    result = json.loads(report.read_text())
    assert code == 0
    assert {"method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings"} <= result.keys()
    assert result["metrics"]["intersection_size"] == 230  # rows 170..399 are held by both
    assert result["metrics"]["secagg_max_abs_error"] < 1e-6
    assert result["metrics"]["matmul_max_abs_error"] < 1e-3
    assert abs(result["steps"]["he_matmul"]["masked_view_correlation"]) < 0.5
    assert result["bytes"] == sum(result["steps"][s]["bytes"] for s in ("psi", "secagg", "he_matmul"))
    assert result["steps"]["methods"] == {}
    assert "[1] PSI" in out and "[2] secure aggregation" in out and f"({backend})" in out


def test_unknown_he_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--he", "rsa"])

    assert exit_info.value.code == 2
    assert "invalid choice: 'rsa'" in capsys.readouterr().err


def test_an_empty_json_path_is_an_error_not_a_silent_skip(capsys):
    # Act: --json "$OUT" with OUT unset
    code = main(["demo", "--epochs", "0", "--json", ""])
    # Assert: refused before any step, as `run` and `psi` refuse it
    assert code == 2 and "--json .: names a folder, expected a file" in capsys.readouterr().err


def test_demo_compares_stfl_with_he_vfl(tmp_path, capsys):
    report = tmp_path / "demo.json"

    code = main(["demo", "--epochs", "2", "--json", str(report)])

    methods = json.loads(report.read_text())["steps"]["methods"]
    assert code == 0 and set(methods) == {"stfl", "he-vfl (ckks)"}
    assert methods["he-vfl (ckks)"]["bytes"] > methods["stfl"]["bytes"] > 0
    out = capsys.readouterr().out
    assert "[4] STFL vs HE-VFL (CKKS)" in out
    # what the passive party learns of the labels: attacked for HE-VFL, read from the transport for STFL
    assert methods["he-vfl (ckks)"]["label_attack"]["cosine_auroc"] > 0.9
    assert methods["stfl"]["passive_received"]["float_values"] == 0
    assert "holding 0 float values: nothing to attack" in out
