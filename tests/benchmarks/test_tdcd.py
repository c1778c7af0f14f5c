"""The TDCD benchmark runs end to end on the bundled data and says what it measured."""

import json

import pytest

from benchmarks import tdcd as bench
from benchmarks.tdcd_report import bytes_per_round, observation
from tests.benchmarks.stamps import without_stamp


def test_quick_run_writes_labelled_curves_with_the_ridge_optimum(tmp_path):
    # Act
    code = bench.main(["--quick", "--json", str(tmp_path / "tdcd.json")])
    # Assert
    data = json.loads((tmp_path / "tdcd.json").read_text())
    assert code == 0 and data["quick"] is True and data["benchmark"] == "tdcd"
    assert [p["figure"] for p in data["panels"]] == ["2b", "2c"]
    silos = data["panels"][0]
    assert [c["value"] for c in silos["curves"]] == [1, 2, 4, 8]
    for curve in silos["curves"]:
        assert curve["setting"]["silos"] == curve["value"] and curve["setting"]["local_steps"] == 4
        first, last = curve["history"][0]["objective"], curve["history"][-1]["objective"]
        assert curve["optimum"] < last < first  # descending towards the ridge minimum, not past it
    text = (tmp_path / "tdcd.md").read_text()
    assert "quick run" in text and "Fig. 2b" in text and "gap left" in text
    assert (tmp_path / "tdcd.png").stat().st_size > 0
    # --render-only rewrites the same Markdown from the stored JSON, running nothing, and says so
    (tmp_path / "tdcd.md").unlink()
    assert bench.main(["--render-only", "--json", str(tmp_path / "tdcd.json")]) == 0
    assert without_stamp((tmp_path / "tdcd.md").read_text()) == text


def _curve(value, objectives, optimum):
    return {"value": value, "optimum": optimum, "history": [{"round": r, "objective": o} for r, o in
                                                             enumerate(objectives)]}


def test_fig_two_curves_are_ranked_by_the_gap_left_not_by_their_optima():
    # Arrange: N=1 ends lower (1.2 against 1.5) but its optimum is lower still, so it has more left
    panel = {"vary": "silos", "curves": [_curve(1, [3.0, 1.2], 1.0), _curve(2, [3.0, 1.5], 1.45)]}
    # Act
    text = observation(panel)
    # Assert: gaps left 0.1 (N=1) and 0.0323 (N=2): N=2 is further converged, against the paper's ordering
    assert "gap left N=2 (0.0323) < N=1 (0.1)" in text and "**ordering does not hold**" in text


def test_bytes_per_round_counts_round_zeros_extra_average():
    # R rounds train R times and average R + 1 times; before, both were divided by R (5% high at R=20)
    assert bytes_per_round({"training": 400, "averaging": 2100, "evaluation": 9}, 20) == 20 + 100


def test_a_real_run_costs_what_the_tdcd_transport_counted_per_average():
    # Arrange / Act: one run of 1 and of 3 rounds; the averaging bytes per averaging are the same
    from securefl.algorithms.tdcd import TDCDConfig
    from securefl.algorithms.tdcd_hub import run_tdcd
    from securefl.data.registry import load_registered
    from securefl.data.tdcd_sets import tiered_split

    split = tiered_split(load_registered("diabetes_sklearn", kind="tdcd", data_dir=None), silos=2, clients=2, seed=0)
    runs = [run_tdcd(split, TDCDConfig(rounds=r, eval_every=0, secure=False))["bytes_by_purpose"] for r in (1, 3)]
    # Assert: equal up to the headers' round numbers; dividing by R instead would differ by 1.5x
    assert runs[0]["averaging"] / 2 == pytest.approx(runs[1]["averaging"] / 4, rel=0.01)
    assert bytes_per_round(runs[0], 1) == pytest.approx(bytes_per_round(runs[1], 3), rel=0.01)


@pytest.mark.parametrize("argv, message", [
    (["--figures", "2d"], "unknown panel(s) ['2d']"),
    (["--datasets", "breast"], "unknown dataset 'breast'"),
    (["--rounds", "0"], "--rounds must be at least 1"),
])
def test_bad_settings_are_usage_errors(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        bench.main([*argv, "--json", str(tmp_path / "t.json")])
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_a_json_where_the_png_goes_is_a_usage_error(tmp_path, capsys):
    # Act: the PNG goes beside the Markdown (r.md), so it would replace r.png
    with pytest.raises(SystemExit) as stop:
        bench.main(["--quick", "--json", str(tmp_path / "r.png")])
    # Assert: refused before any run
    png = tmp_path / "r.png"
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"the PNG beside --markdown {png} would replace --json {png}" in err
    assert not (tmp_path / "r.png").exists()


def test_render_only_refuses_a_png_over_its_input_and_keeps_it(tmp_path, capsys):
    # Arrange: a stored result named like the PNG its Markdown would get
    stored = tmp_path / "r.png"
    stored.write_text('{"benchmark": "tdcd", "panels": [], "settings": {}}')
    # Act
    with pytest.raises(SystemExit) as stop:
        bench.main(["--render-only", "--json", str(stored), "--markdown", str(tmp_path / "r.md")])
    # Assert
    assert stop.value.code == 2 and f"would replace --json {stored}" in capsys.readouterr().err
    assert stored.read_text() == '{"benchmark": "tdcd", "panels": [], "settings": {}}'
    assert not (tmp_path / "r.md").exists()
