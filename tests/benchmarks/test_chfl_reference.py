"""The CHFL reference-learner benchmark: its learners, its 3-split statistics and its inputs."""

import json

import numpy as np
import pytest

from benchmarks import chfl_reference as bench
from benchmarks.chfl_reference_report import best_of_three, summarize, to_markdown
from securefl.data.chfl_partition import FeatureSpec, chfl_partition
from securefl.data.chfl_sets import TabularDataset


def test_best_of_three_known_answer():
    # Arrange: the four 3-split means are 0.6, 0.6333, 0.6667 and 0.7
    values = [0.5, 0.6, 0.7, 0.8]
    # Act
    out = best_of_three(values, target=0.7)
    # Assert: only 0.7 is within 2 points of the target or above it
    assert out["best"] == pytest.approx(0.7) and out["combinations"] == 4
    assert out["share_near_or_above"] == pytest.approx(0.25)
    assert best_of_three([0.5, 0.6], target=0.7) is None


def test_each_reference_sees_only_the_features_it_should():
    # Arrange: the label is client c0's unique feature u0; the common feature is noise
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    x = np.column_stack([rng.normal(size=600), y + 0.05 * rng.normal(size=600), rng.normal(size=600)])
    ds = TabularDataset("toy", x, y, ("c", "u0", "u1"), ("0", "1"))
    part = chfl_partition(ds, spec=FeatureSpec(common=("c",), unique=(("u0",), ("u1",))))
    # Act
    acc = bench.reference_run(ds, part, trees=20)
    # Assert: c0's own models and the all-feature model find the label; common-only and c1's do not
    assert acc["local_gbm"][0] > 0.95 and acc["local_trees"][0] > 0.95
    assert max(acc["local_gbm"][1], acc["local_trees"][1], *acc["pooled_common"]) < 0.7
    assert min(acc["pooled_all"]) > 0.95
    # the all-feature model does not depend on the feature split: a later split reuses its accuracies
    again = bench.reference_run(ds, part, trees=20, pooled_all=acc["pooled_all"])
    assert again["pooled_all"] == acc["pooled_all"]


def test_quick_run_writes_labelled_json_and_markdown(tmp_path):
    out = tmp_path / "ref.json"

    code = bench.main(["--quick", "--json", str(out)])

    data = json.loads(out.read_text())
    assert code == 0 and data["quick"] is True and data["benchmark"] == "chfl_reference"
    assert set(data["runs"][0]["accuracy"]) == set(bench.LEARNERS)
    assert all(len(v) == 5 for v in data["runs"][0]["clients"].values())
    assert "quick run" in (tmp_path / "ref.md").read_text()

    # --render-only rewrites the Markdown from the JSON alone, the same as the run wrote it but for the line
    # saying that the tables were re-derived
    first = (tmp_path / "ref.md").read_text()
    (tmp_path / "ref.md").unlink()
    assert bench.main(["--render-only", "--json", str(out)]) == 0
    again = (tmp_path / "ref.md").read_text().splitlines()
    assert [line for line in again if not line.startswith("- tables re-derived")] == first.splitlines()
    assert len(again) == len(first.splitlines()) + 1


def _chfl_file(path, lrs, quick=False):
    runs = [{"job": {"experiment": "table2", "dataset": "digits", "n_clients": 5, "ratio": 0.3, "feature_seed": 0,
                     "seed": 0, "lr": lr}, "accuracy": {"common": 0.5}} for lr in lrs]
    path.write_text(json.dumps({"benchmark": "chfl", "quick": quick, "runs": runs,
                                "settings": {"lrs": sorted(set(lrs)), "rounds": 4 if quick else 20}}))
    return path


def _reference_file(path, quick):
    """A stored chfl_reference result (one digits split, no MLP columns), written without fitting anything."""
    run = {"job": {"dataset": "digits", "n_clients": 5, "feature_seed": 0},
           "accuracy": dict.fromkeys(bench.LEARNERS, 0.5), "common_features": [], "unique_features": [[]] * 5}
    path.write_text(json.dumps({"benchmark": "chfl_reference", "date": "d", "commit": "c", "quick": quick,
                                "device": {"device": "cpu", "cpu": "x", "cores": 2}, "command": None,
                                "settings": {"compare": None}, "seconds": 1.0, "runs": [run],
                                "mlp": {"source": {}, "runs": []}}))
    return path


@pytest.mark.parametrize("render_only", [False, True])
def test_compare_refuses_a_quick_chfl_file_beside_a_full_reference_run(tmp_path, monkeypatch, render_only):
    # Arrange: a full reference run (a fresh one, or a stored one to re-render) and a --quick chfl file
    monkeypatch.setattr(bench, "run_job", lambda *a: pytest.fail("a reference learner ran"))
    chfl = _chfl_file(tmp_path / "chfl_quick.json", [1e-3], quick=True)
    out = tmp_path / "ref.json"
    before = _reference_file(out, quick=False).read_text() if render_only else None
    argv = ["--render-only"] if render_only else ["--datasets", "digits"]
    # Act
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--compare", str(chfl), "--json", str(out)])
    # Assert: one line naming --compare; nothing written
    assert str(stop.value).startswith("--compare: ") and "--quick" in str(stop.value) and "\n" not in str(stop.value)
    assert (out.read_text() == before) if render_only else not out.exists()
    assert not out.with_suffix(".md").exists()


@pytest.mark.parametrize(("quick", "kind"), [(True, "4 rounds, **--quick run**"), (False, "20 rounds, full run")])
def test_compare_line_gives_the_chfl_files_rounds_and_quick_flag(tmp_path, quick, kind):
    # Arrange: a quick reference run takes either kind of chfl file
    chfl = _chfl_file(tmp_path / "chfl.json", [1e-3], quick=quick)
    out = _reference_file(tmp_path / "ref.json", quick=True)
    # Act
    bench.main(["--render-only", "--compare", str(chfl), "--json", str(out)])
    # Assert
    line = next(x for x in out.with_suffix(".md").read_text().splitlines() if x.startswith("MLP columns:"))
    assert kind in line and json.loads(out.read_text())["mlp"]["source"]["quick"] is quick


def test_render_only_compare_stamps_the_json_and_the_header(tmp_path):
    # Arrange
    chfl = _chfl_file(tmp_path / "chfl.json", [1e-3])
    out = _reference_file(tmp_path / "ref.json", quick=False)
    # Act
    bench.main(["--render-only", "--compare", str(chfl), "--json", str(out)])
    # Assert: the JSON whose MLP runs were replaced says when and at which commit; so does its Markdown
    stamp = json.loads(out.read_text())["rendered"]
    assert stamp["date"] and stamp["commit"]
    assert f"- tables re-derived from the runs on {stamp['date']}" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize(("content", "message"), [
    (None, "does not exist"),
    ("tuned", "several learning rates"),
    ('{"benchmark": "gl", "runs": []}', "is not a chfl result file"),
])
def test_a_bad_compare_file_stops_before_any_run(tmp_path, capsys, content, message):
    # Arrange
    path = tmp_path / "chfl.json"
    if content == "tuned":
        _chfl_file(path, [1e-3, 3e-3])
    elif content:
        path.write_text(content)
    # Act
    with pytest.raises(SystemExit) as stop:
        bench.main(["--quick", "--compare", str(path), "--json", str(tmp_path / "r.json")])
    # Assert
    assert message in str(stop.value) and not (tmp_path / "r.json").exists()
    assert "digits K=5" not in capsys.readouterr().out


def test_compare_puts_the_mlp_numbers_beside_the_references(tmp_path):
    out = tmp_path / "ref.json"
    chfl = _chfl_file(tmp_path / "chfl.json", [1e-3])

    bench.main(["--quick", "--compare", str(chfl), "--json", str(out)])

    summary = json.loads(out.read_text())["summary"][0]
    assert summary["cells"]["mlp_common"]["mean"] == 0.5

    # --render-only --compare replaces the MLP runs (e.g. after more splits were merged into the chfl file)
    data = json.loads(chfl.read_text())
    data["runs"][0]["accuracy"]["common"] = 0.75
    chfl.write_text(json.dumps(data))
    bench.main(["--render-only", "--compare", str(chfl), "--json", str(out)])
    assert json.loads(out.read_text())["summary"][0]["cells"]["mlp_common"]["mean"] == 0.75
    assert "| 0.7500 (n=1) |" in out.with_suffix(".md").read_text()


def test_compare_reads_a_file_from_before_the_lr_grid_at_its_one_rate(tmp_path):
    # Arrange: the header had "lr", not "lrs", and jobs had no lr field (benchmarks.chfl_merge's rule)
    chfl = _chfl_file(tmp_path / "chfl.json", [1e-3])
    data = json.loads(chfl.read_text())
    data["settings"] = {"lr": 3e-3}
    del data["runs"][0]["job"]["lr"]
    chfl.write_text(json.dumps(data))
    out = tmp_path / "ref.json"
    # Act
    bench.main(["--quick", "--compare", str(chfl), "--json", str(out)])
    # Assert
    assert json.loads(out.read_text())["mlp"]["runs"][0]["job"]["lr"] == 3e-3


@pytest.mark.parametrize("argv", [["--splits", "0"], ["--clients", "1,5"], ["--clients", "x"],
                                  ["--datasets", "aloi"]])
def test_bad_settings_are_usage_errors(tmp_path, argv):
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--json", str(tmp_path / "r.json")])

    assert stop.value.code == 2 and not (tmp_path / "r.json").exists()


def test_summary_counts_the_splits_where_the_key_feature_is_common_and_says_so():
    # Arrange: two covertype splits, Elevation common in the first only
    acc = {name: 0.5 for name in bench.LEARNERS}
    runs = [{"job": {"dataset": "covertype", "n_clients": 5, "feature_seed": s}, "accuracy": acc,
             "common_features": common, "unique_features": [[]] * 5}
            for s, common in ((0, ["Elevation", "Slope"]), (1, ["Slope"]))]
    report = {"runs": runs, "mlp": {"runs": []}, "settings": {}, "seconds": 1.0}
    # Act
    entry = summarize(report)[0]
    text = to_markdown({**report, "summary": [entry]}, "# header\n")
    # Assert
    assert entry["key_common"] == 1 and entry["paper"]["common"] == pytest.approx(0.6218)
    assert "Elevation is a common feature in 1 of the 2 feature splits here (50%" in text
    assert "| 0 | common |" in text and "| 1 | nobody |" in text
