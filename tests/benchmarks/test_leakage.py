"""The label-leakage benchmark runs end to end on the bundled data and says what it measured."""

import json
import math

import pytest

from benchmarks import leakage as bench
from tests.benchmarks.stamps import without_stamp


def test_quick_run_attacks_he_vfl_and_reads_stfls_transport(tmp_path):
    # Act
    code = bench.main(["--quick", "--json", str(tmp_path / "leakage.json")])
    # Assert
    data = json.loads((tmp_path / "leakage.json").read_text())
    assert code == 0 and data["quick"] is True and data["settings"]["steps"] == 2
    result = data["datasets"]["breast_sklearn"]
    assert len(result["runs"]) == 2 and all(r["he_vfl"]["graded_steps"] == 2 for r in result["runs"])
    summary = result["summary"]
    assert summary["cosine_auroc"] > 0.9  # HE-VFL's passive party reads the labels off its gradients
    assert summary["stfl_float_values"] == 0  # STFL's passive party gets no float at all
    assert summary["stfl_kinds"] == ["channel/hello", "psi/rows", "psi/singles"]
    plain, secure = data["server_view"]  # CHFL on digits: the server reads plain updates, masked words only
    assert (plain["aggregation"], secure["aggregation"]) == ("plain", "secure")
    assert plain["float_values"] > 0 and plain["uint64_words"] == 0
    assert secure["float_values"] == 0 and secure["uint64_words"] == plain["float_values"]
    assert 0.49 < secure["uint64_one_bit_rate"] < 0.51 and 0.45 < secure["uint64_top_bits_agree"] < 0.55
    assert secure["client_accuracy"] == pytest.approx(plain["client_accuracy"], abs=0.02)
    hub_plain, hub_masked, two_silos = data["hub_view"]  # TDCD: what hub0 got from the other hubs
    assert hub_plain["float_values"] > 0 and hub_plain["uint64_words"] == 0
    assert hub_masked["float_values"] == 0 and hub_masked["uint64_words"] == hub_plain["float_values"]
    assert hub_masked["objective"] == pytest.approx(hub_plain["objective"], rel=1e-6)
    assert two_silos["silos"] == 2 and two_silos["float_values"] > 0  # the other silo's Phi: nothing to hide
    text = (tmp_path / "leakage.md").read_text()
    assert "quick run" in text and "nothing to attack" in text and "The averaging server's view" in text
    assert "TDCD: what a hub receives from the other hubs" in text
    checks = {row["check"]: row["stats"] for row in data["key_owner_view"]}  # HE-VFL's key owner, one shape each
    assert len(checks) == 5 and checks["padding attack"]["dz_error"][0] > 0.5
    assert checks["read-lane attack"]["dz_error_if_predictable"][0] < 1e-3
    assert "HE-VFL's key owner: what it can read beyond dL/da" in text
    # --render-only rewrites the same Markdown from the stored JSON, running nothing, and says so
    (tmp_path / "leakage.md").unlink()
    assert bench.main(["--render-only", "--json", str(tmp_path / "leakage.json")]) == 0
    assert without_stamp((tmp_path / "leakage.md").read_text()) == text
    assert json.loads((tmp_path / "leakage.json").read_text())["datasets"] == data["datasets"]


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "mnist"], "unknown dataset 'mnist'"),
    (["--steps", "0"], "--seeds and --steps must be at least 1"),
])
def test_bad_settings_are_usage_errors(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--json", str(tmp_path / "r.json")])

    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_dataset_whose_files_are_missing_is_one_line_before_any_run(tmp_path, capsys):
    code = bench.main(["--datasets", "breast", "--data-dir", str(tmp_path), "--json", str(tmp_path / "r.json")])

    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("benchmarks.leakage: error:"), err
    assert not (tmp_path / "r.json").exists()


def test_render_only_needs_a_leakage_result(tmp_path):
    (tmp_path / "other.json").write_text('{"benchmark": "gl", "datasets": {}}')

    with pytest.raises(SystemExit, match="is not a leakage result file"):
        bench.main(["--render-only", "--json", str(tmp_path / "other.json")])


def test_summary_std_is_the_sample_std_over_seeds():
    # Arrange: two seeds whose attacks scored 0.6 and 0.8
    seeds = [{"he_vfl": {"norm_auroc": a, "cosine_auroc": a, "positive_rate": 0.4},
              "stfl": {"p": {"float_values": 0, "kinds": []}}} for a in (0.6, 0.8)]
    # Act
    out = bench.summary(seeds)
    # Assert: n - 1 in the denominator, as every other result file's std
    assert out["norm_auroc"] == pytest.approx(0.7) and out["norm_auroc_std"] == pytest.approx(0.02 ** 0.5)


CONFIG = bench.Config(datasets=("breast_sklearn",), seeds=1, steps=2, he="ckks", quick=True)
META = {"date": "d", "commit": "c", "quick": True, "settings": {}, "device": {"device": "cpu", "cpu": "c", "cores": 1}}


def _seeds(*aurocs):
    return [{"he_vfl": {"norm_auroc": a, "cosine_auroc": a, "positive_rate": 0.4},
             "stfl": {"p": {"float_values": 0, "kinds": []}}} for a in aurocs]


def test_one_seed_has_no_std_stored_or_shown(tmp_path):
    # Act
    out = bench.summary(_seeds(0.6))
    text = bench.markdown(META, {"breast_sklearn": {"summary": out}}, [], CONFIG)
    bench.write_json(tmp_path / "s.json", out)
    # Assert: undefined, null in JSON, and the cell is the mean alone
    assert math.isnan(out["norm_auroc_std"]) and json.loads((tmp_path / "s.json").read_text())["norm_auroc_std"] is None
    assert "| 0.600 |" in text and "± 0.000" not in text


def test_a_stored_one_seed_summary_with_std_zero_renders_without_a_spread():
    # Arrange: files written before the fix stored std 0.0 for one seed
    old = {**bench.summary(_seeds(0.6)), "norm_auroc_std": 0.0, "cosine_auroc_std": 0.0}
    # Act
    text = bench.markdown(META, {"breast_sklearn": {"summary": old}}, [], CONFIG)
    # Assert: the number of seeds decides, not the stored std
    assert "| 0.600 |" in text and "± 0.000" not in text
