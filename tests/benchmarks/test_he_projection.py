"""The projection check runs one HE-VFL cell both ways and compares them."""

import json

import pytest

from benchmarks import he_projection as bench


def _cell(training, inference, active, passive, accuracy):
    return {"phases": {"training": training, "inference": inference}, "seconds": training + inference,
            "bytes_per_party": {"active": active, "passive": passive},
            "metrics": {"accuracy": accuracy, "auroc": 0.9}}


def test_compare_divides_measured_by_projected():
    # Arrange
    projected, measured = _cell(100.0, 0.0, 1000, 500, 0.8), _cell(110.0, 2.0, 1000, 550, 0.8)
    # Act
    rows = {r["quantity"]: r for r in bench.compare(projected, measured)}
    # Assert
    assert rows["training s"]["ratio"] == pytest.approx(1.1)
    assert rows["inference s"]["ratio"] is None  # nothing projected: no ratio, not a division by zero
    assert rows["total s"]["measured"] == 112.0
    assert rows["bytes sent, passive"]["ratio"] == pytest.approx(1.1)
    assert rows["test accuracy"]["ratio"] == 1.0 and set(rows) >= {"bytes sent, active", "test auroc"}


def test_quick_run_writes_both_readings_of_one_cell(tmp_path):
    # Act
    code = bench.main(["--quick", "--json", str(tmp_path / "p.json")])
    # Assert
    data = json.loads((tmp_path / "p.json").read_text())
    assert code == 0 and data["quick"] is True and data["benchmark"] == "he_projection"
    assert data["projected"]["mode"] != data["measured"]["mode"] == "measured"
    assert data["measured"]["steps"] == data["projected"]["total_steps"] == 2
    assert data["projected"]["timed_steps"] == 2  # the steps run, never more than there are
    rows = {r["quantity"]: r for r in data["comparison"]}
    for party in ("active", "passive"):  # every step timed: the byte projection is the count itself
        assert rows[f"bytes sent, {party}"]["ratio"] == pytest.approx(1.0, abs=0.01)
    assert rows["test accuracy"]["measured"] == pytest.approx(rows["test accuracy"]["projected"], abs=0.02)
    assert len(data["seal_rotation_ms"]) == 3 and min(data["seal_rotation_ms"]) > 0
    text = (tmp_path / "p.md").read_text()
    assert "quick run" in text and "| training s |" in text and "measured in full" in text


@pytest.mark.parametrize("argv", [["--timed-steps", "1"], ["--epochs", "0"], ["--dataset", "nope"]])
def test_bad_settings_stop_before_any_run(argv, tmp_path, capsys):
    # Act
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--json", str(tmp_path / "p.json")])
    # Assert
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_a_quick_run_keeps_off_the_committed_file_and_refuses_sizes_it_would_drop(capsys):
    # before, --quick wrote benchmarks/results/he_projection.json and ignored --dataset/--epochs
    assert bench.parse_args(["--quick"]).json_path.name == "he_projection.quick.json"
    assert bench.parse_args([]).json_path.name == "he_projection.json"
    with pytest.raises(SystemExit) as stop:
        bench.parse_args(["--quick", "--epochs", "50"])
    assert stop.value.code == 2
    assert "--quick sets --dataset, --epochs, --timed-steps itself" in capsys.readouterr().err
