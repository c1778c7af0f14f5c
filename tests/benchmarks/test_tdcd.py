"""The TDCD benchmark runs end to end on the bundled data and says what it measured."""

import json

import pytest

from benchmarks import tdcd as bench


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
    # --render-only rewrites the same Markdown from the stored JSON, running nothing
    (tmp_path / "tdcd.md").unlink()
    assert bench.main(["--render-only", "--json", str(tmp_path / "tdcd.json")]) == 0
    assert (tmp_path / "tdcd.md").read_text() == text


@pytest.mark.parametrize("argv, message", [
    (["--figures", "2d"], "unknown panel(s) ['2d']"),
    (["--datasets", "breast"], "unknown dataset 'breast'"),
    (["--rounds", "0"], "--rounds must be at least 1"),
])
def test_bad_settings_are_usage_errors(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        bench.main([*argv, "--json", str(tmp_path / "t.json")])
    assert info.value.code == 2 and message in capsys.readouterr().err
