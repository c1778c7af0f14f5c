"""benchmarks.latent_leakage: features rebuilt from the latents STFL's active party receives."""

import json
import math

import pytest

from benchmarks.latent_leakage import main, markdown, parse_args, summarise


def test_quick_run_attacks_both_readings_and_labels_itself(tmp_path):
    # Act
    out = tmp_path / "ll.json"
    assert main(["--quick", "--json", str(out)]) == 0
    # Assert: both readings and both shares, per seed, from what the active party received
    stored = json.loads(out.read_text())
    res = stored["datasets"]["breast_sklearn"]
    assert stored["quick"] and len(res["seeds"]) == 2 and res["latent"] == {"passive": 10}
    means = res["summary"]["passive"]["mean"]
    assert set(res["summary"]["passive"]) == {"mean", "sample"} and set(means) == {"0.1", "0.5"}
    assert 0.2 < means["0.5"]["mean"] <= 1.0  # the means give much of the features away
    assert "quick run" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--known", "0.1,1.0"], "strictly between 0 and 1"),
    (["--known", "a"], "comma-separated shares"),
    (["--seeds", "0"], "--seeds must be at least 1"),
])
def test_bad_arguments_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        parse_args(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


META = {"date": "d", "commit": "c", "quick": True, "settings": {}, "device": {"device": "cpu", "cpu": "c", "cores": 1}}


def _result(summary):
    return {"breast_sklearn": {"summary": summary, "features": {"passive": 10}, "latent": {"passive": 10}}}


def test_one_seed_has_no_std_and_its_cell_shows_no_spread():
    # Arrange: one seed's R² per reading and known share
    seeds = [{"passive": {"mean": {"0.5": 0.8}, "sample": {"0.5": 0.4}}}]
    # Act
    out = summarise(seeds)
    text = markdown(META, _result(out))
    # Assert: undefined, not 0.0; the cell says n=1 instead of "± 0.000"
    assert math.isnan(out["passive"]["mean"]["0.5"]["std"]) and out["passive"]["mean"]["0.5"]["n"] == 1
    assert "| 0.800 (n=1) | 0.400 (n=1) |" in text and "± 0.000" not in text


def test_a_stored_one_seed_summary_with_std_zero_renders_as_a_new_one():
    # Arrange: files written before the fix stored std 0.0 for one seed
    old = {"passive": {r: {"0.5": {"mean": 0.8, "std": 0.0, "n": 1}} for r in ("mean", "sample")}}
    # Act
    text = markdown(META, _result(old))
    # Assert: n decides, not the stored std
    assert "| 0.800 (n=1) | 0.800 (n=1) |" in text and "± 0.000" not in text
