"""The CHFL benchmark: job plan, summaries, tables with the paper beside ours, honest verdicts."""

import argparse
import json
import math
from pathlib import Path

import pytest

from benchmarks.chfl import main, parse_args
from benchmarks.chfl_jobs import Job, plan
from benchmarks.chfl_summary import summarize
from benchmarks.chfl_report import ordering, plot_fig4, to_markdown
from benchmarks.common import markdown_header


def _out(experiment, acc, n=5, ratio=0.3, split=0, seed=0, secure=True, dataset="covertype"):
    job = Job(experiment, dataset, n, ratio, split, seed, ("chfl",), 3, secure)
    methods = ("common", "local", "chfl_mu0", "chfl", "simple")
    return {"job": job.__dict__, "accuracy": dict(zip(methods, acc)), "round_seconds": [2.0, 2.0],
            "aggregation_seconds": [0.1, 0.1] if secure else [0.01, 0.01], "bytes": 100}


def _report(tmp_path, table2_acc):
    runs = [_out("table2", table2_acc, split=s) for s in range(2)]
    runs += [_out("table3", (0.6, 0.7, 0.72, 0.73), n=2), _out("fig4", (0.5, 0.6, 0.62, 0.63), ratio=0.1)]
    runs += [_out("timing", table2_acc, secure=flag) for flag in (True, False)]
    cfg = parse_args(["--json", str(tmp_path / "chfl.json")])
    report = {"date": "d", "commit": "c", "quick": False, "device": {"device": "cpu", "cpu": "x", "cores": 2},
              "settings": {"splits": 2, "runs": 1, "sweep_splits": 1, "rounds": 3, "mus": [1.0]},
              "command": None, "seconds": 1.0, "runs": runs, "summary": summarize(runs),
              "not_run": {"helena": "not run here (files not available: chfl/helena.arff)"}}
    return cfg, report


def test_plan_shares_the_five_client_thirty_percent_point():
    cfg = parse_args(["--splits", "3", "--runs", "2", "--sweep-splits", "2", "--lrs", "0.001"])
    jobs = plan(cfg, ["covertype", "digits"])
    assert sum(j.experiment == "table2" for j in jobs) == 12
    assert sum(j.experiment == "table3" for j in jobs) == 4  # 2 and 10 clients
    assert sum(j.experiment == "fig4" for j in jobs) == 8  # four ratios besides 0.3
    assert {j.secure for j in jobs if j.experiment == "timing"} == {True, False}


def test_plan_gives_the_shared_point_the_sweeps_splits_that_table_two_lacks():
    # Arrange / Act: Table II has 1 split, the sweep 3
    jobs = plan(parse_args(["--splits", "1", "--runs", "1", "--sweep-splits", "3", "--lrs", "0.001"]), ["covertype"])
    # Assert: the 5-client / 30% point gets splits 1 and 2 besides Table II's split 0
    shared = [j for j in jobs if j.experiment == "fig4" and j.ratio == 0.3]
    assert [(j.n_clients, j.feature_seed) for j in shared] == [(5, 1), (5, 2)]
    assert not [j for j in plan(parse_args(["--splits", "3", "--sweep-splits", "3"]), ["covertype"])
                if j.experiment == "fig4" and j.ratio == 0.3]


def test_the_shared_point_averages_over_the_sweeps_splits_only():
    # Arrange: Table II on splits 0-2, the other sweep points on split 0 alone
    runs = [_out("table2", (0.5 + s / 10, 0.6, 0.62, 0.63, 0.6), split=s) for s in range(3)]
    runs += [_out("table3", (0.6, 0.7, 0.72, 0.73), n=2), _out("fig4", (0.5, 0.6, 0.62, 0.63), ratio=0.1)]
    # Act
    summary = summarize(runs)
    # Assert: Table II keeps all three splits; the shared point only split 0, like its neighbours
    assert summary["table2"]["covertype"]["common"]["n"] == 3
    one = summary["table3"]["5"]["common"]
    assert (one["mean"], one["n"]) == (0.5, 1) and math.isnan(one["std"])  # one run has no spread
    assert summary["fig4"]["0.3"]["common"]["n"] == 1 and "simple" in summary["table3"]["5"]


def test_plan_repeats_every_accuracy_run_per_learning_rate_but_times_once():
    # Arrange / Act
    cfg = parse_args(["--splits", "2", "--runs", "1", "--sweep-splits", "1", "--lrs", "0.003,0.0003,0.001"])
    jobs = plan(cfg, ["covertype"])
    # Assert: the grid is sorted, each accuracy run has all three, timing runs at the middle lr only
    assert cfg.lrs == (0.0003, 0.001, 0.003)
    table2 = [j for j in jobs if j.experiment == "table2"]
    assert len(table2) == 6 and {j.lr for j in table2 if j.feature_seed == 1} == set(cfg.lrs)
    assert sum(j.experiment == "fig4" for j in jobs) == 12  # 4 ratios x 1 split x 3 lrs
    assert [j.lr for j in jobs if j.experiment == "timing"] == [0.001, 0.001]


@pytest.mark.parametrize("flag, text", [("--lrs", "0.001,x"), ("--lrs", "0.001,-0.1"), ("--lrs", "0.001,0.001"),
                                        ("--lrs", "0"), ("--lrs", "nan"), ("--mus", "0.5,1.5"), ("--mus", "0"),
                                        ("--ratios", "0.3,1"), ("--ratios", ""), ("--clients", "2,2.5"),
                                        ("--clients", "1,5")])
def test_bad_number_list_is_a_usage_error_naming_the_flag(flag, text, capsys):
    with pytest.raises(SystemExit) as err:
        parse_args([flag, text])
    assert err.value.code == 2 and flag in capsys.readouterr().err


def test_number_lists_are_sorted():
    cfg = parse_args(["--mus", "1,0.5", "--ratios", "0.5,0.1", "--clients", "10,2"])
    assert (cfg.mus, cfg.ratios, cfg.clients) == ((0.5, 1.0), (0.1, 0.5), (2, 10))


def test_the_benchmark_and_the_library_share_one_mu_grid():
    from securefl.algorithms.chfl import CHFLConfig
    from securefl.commands.run_horizontal import add_arguments

    # Arrange: the CLI's help names the default it leaves to CHFLConfig
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    help_text = next(a.help for a in parser._actions if a.dest == "mus")
    # Act
    benchmark = parse_args([]).mus
    # Assert
    assert benchmark == CHFLConfig().mus
    assert ",".join(f"{m:g}" for m in CHFLConfig().mus) in help_text


def test_ordering_verdict_follows_the_means():
    good = {m: {"mean": v} for m, v in zip(("common", "local", "chfl_mu0", "chfl"), (0.6, 0.62, 0.65, 0.66))}
    bad = {**good, "chfl_mu0": {"mean": 0.61}}
    assert ordering(good) == "holds"
    assert "does not hold" in ordering(bad)


def test_markdown_has_paper_rows_missing_datasets_and_timing(tmp_path):
    # Arrange
    _, report = _report(tmp_path, (0.62, 0.64, 0.675, 0.685, 0.66))
    # Act
    text = to_markdown(report, markdown_header("CHFL", report))
    # Assert
    assert "| helena | ours | not run here (files not available)" in text
    assert "| covertype | paper | 0.6218 | 0.6407 | 0.6744 | 0.6843 | 0.6637 | holds |" in text
    assert "within 2 points: met" in text and "**not met**" not in text
    assert "| secure | 3 | 2.00 | 0.100 | 100 |" in text
    lines = [line for line in text.splitlines() if line.startswith(("| covertype | ours", "| covertype | paper"))]
    assert len(lines) == 2 and len({line.count("|") for line in lines}) == 1


def test_markdown_says_a_cell_is_the_mean_and_sample_std_over_runs(tmp_path):
    # Arrange
    _, report = _report(tmp_path, (0.62, 0.64, 0.675, 0.685, 0.66))
    # Act
    text = to_markdown(report, markdown_header("CHFL", report))
    # Assert: statistics.stdev, the n - 1 std, is what chfl_summary.cell stores
    assert "a cell the mean ± sample std (n − 1) over runs" in text


def test_covertype_far_from_the_paper_is_not_met(tmp_path):
    _, report = _report(tmp_path, (0.45, 0.60, 0.58, 0.65, 0.6))
    text = to_markdown(report, markdown_header("CHFL", report))
    assert "**not met**" in text and "**does not hold**" in text


def test_fig4_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    _, report = _report(tmp_path, (0.62, 0.64, 0.675, 0.685, 0.66))
    path = plot_fig4(report, tmp_path / "chfl.png")
    assert path is not None and Path(path).stat().st_size > 1000


def test_split_table_lists_each_feature_split_with_its_common_features(tmp_path):
    # Arrange: two Table II runs of split 0 (recorded features), one of split 1 with none recorded
    from benchmarks.chfl_report import split_table

    runs = [_out("table2", (0.4, 0.6, 0.62, 0.64, 0.6), split=0, seed=s) for s in range(2)]
    runs[1]["accuracy"]["common"] = 0.5
    for r in runs:
        r["common_features"] = ["Elevation", "Soil_Type12"]
    runs.append(_out("table2", (0.3, 0.6, 0.61, 0.62, 0.6), split=1, dataset="nosuch"))
    # Act
    table = split_table({"runs": runs}, data_dir=str(tmp_path))
    # Assert: split 0 averages its two runs and shortens names; the unknown dataset's features show as —
    row0 = next(line for line in table.splitlines() if line.startswith("| covertype | 0 |"))
    assert "| 2 | 0.4500 | 0.6000 |" in row0 and row0.endswith("Elevation, Soil12 |")
    row1 = next(line for line in table.splitlines() if line.startswith("| nosuch | 1 |"))
    assert row1.endswith("| — |")


def test_render_only_re_derives_the_tables_from_the_stored_runs(tmp_path):
    # Arrange: a stored result whose summary is stale
    _, report = _report(tmp_path, (0.5, 0.6, 0.62, 0.63, 0.6))
    report.update(benchmark="chfl", summary={**report["summary"], "table3": {}})
    (tmp_path / "chfl.json").write_text(json.dumps(report))
    # Act
    code = main(["--render-only", "--json", str(tmp_path / "chfl.json")])
    # Assert: the summary is recomputed and written back, and the Markdown says when and that nothing ran
    stored = json.loads((tmp_path / "chfl.json").read_text())
    derived = json.loads(json.dumps(summarize(report["runs"])["table3"]).replace("NaN", "null"))  # as stored
    assert code == 0 and stored["summary"]["table3"] == derived != {}
    assert stored["runs"] == json.loads(json.dumps(report["runs"])) and stored["rendered"]["date"]
    assert "`--render-only`; nothing was rerun" in (tmp_path / "chfl.md").read_text()
