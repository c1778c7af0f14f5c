"""benchmarks.latent_leakage: features rebuilt from the latents STFL's active party receives."""

import json

import pytest

from benchmarks.latent_leakage import main, parse_args


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
