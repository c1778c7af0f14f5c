"""GL benchmark --merge: which seeds count as done, and provenance of files written before --merge."""

import argparse
import os

import pytest

from benchmarks.gl import complete_seeds, gpu_peaks, run_dataset, upgrade

NEEDS_DATA = pytest.mark.skipif(not os.environ.get("SECUREFL_DATA"), reason="SECUREFL_DATA is not set (heart files)")


def _run(method, seed):
    return {"method": method, "seed": seed}


def test_a_seed_is_complete_only_when_every_method_ran():
    # Arrange: heart runs gl, fedavg and local; seed 1 lacks local
    runs = [_run(m, 0) for m in ("gl", "fedavg", "local")] + [_run("gl", 1), _run("fedavg", 1)]
    # Act / Assert
    assert complete_seeds(runs, "gl_heart") == {0}


def test_covertype_needs_centralized_too():
    runs = [_run(m, 8) for m in ("gl", "fedavg", "local")]
    assert complete_seeds(runs, "gl_covertype") == set()


def test_upgrade_gives_old_datasets_their_header_as_provenance():
    # Arrange: a file written before --merge existed (no runs_from)
    old = {"date": "d", "commit": "c", "device": {"device": "cpu"}, "command": "python -m benchmarks.gl",
           "datasets": {"gl_heart": {"seeds": [0, 1], "seconds": 12.0, "runs": []}}}
    # Act
    up = upgrade(old)
    # Assert
    assert up["gl_heart"]["runs_from"] == [{"date": "d", "commit": "c", "device": {"device": "cpu"},
                                            "command": "python -m benchmarks.gl", "seeds": [0, 1], "seconds": 12.0}]


def test_upgrade_keeps_existing_provenance():
    prov = [{"date": "d1", "commit": "c1", "device": None, "command": "x", "seeds": [8], "seconds": 1.0}]
    old = {"datasets": {"gl_covertype": {"seeds": [8], "runs": [], "runs_from": prov}}}
    assert upgrade(old)["gl_covertype"]["runs_from"] == prov


def test_merge_refuses_results_run_with_other_settings(tmp_path):
    # Arrange: a previous covertype result whose settings differ from the paper configuration
    args = argparse.Namespace(quick=False, device="cpu", json=tmp_path / "gl.json", workers=1, data_dir=None,
                              bn_stats="averaged", reuse=None, final="average", batches=None, select="last")
    previous = {"settings": {"epochs": 3}, "runs": [], "runs_from": []}
    # Act / Assert: nothing runs; the error names the dataset and the file
    with pytest.raises(SystemExit, match="gl_covertype settings in .*gl.json differ"):
        run_dataset("gl_covertype", [8], args, {}, previous)


def test_render_only_recomputes_the_tables_from_the_runs_and_runs_nothing(tmp_path):
    # Arrange: a result file whose stored Table 2 is stale (empty) but whose runs are there
    import json

    from benchmarks.gl import main

    runs = [{"method": m, "seed": 0, "seconds": 1.0, "metrics": {"clients": {"cleveland": {
        "auroc": a, "accuracy": 0.7, "balanced_accuracy": 0.7, "auprc": 0.6}}}}
        for m, a in (("gl", 0.9), ("fedavg", 0.8), ("local", 0.7))]
    result = {"settings": {}, "seeds": [0], "methods": ["gl", "fedavg", "local"],
              "parameters": {"ours": {}, "paper": {}}, "run_seconds": {"gl": 1.0},
              "aggregation_round_seconds": {}, "table2": [], "best_auroc": [], "runs": runs,
              "runs_from": [{"date": "d", "commit": "c", "device": {}, "command": "x", "seeds": [0]}]}
    path, markdown = tmp_path / "gl.json", tmp_path / "gl.md"
    path.write_text(json.dumps({"date": "d", "commit": "c", "quick": False, "settings": {}, "command": "x",
                                "device": {"device": "cpu", "cpu": "x", "cores": 2},
                                "datasets": {"gl_heart": result}}))
    # Act
    code = main(["--render-only", "--json", str(path), "--reference", str(tmp_path / "no-reference")])
    # Assert: tables derived again, the header (beside --json by default) says so, the runs are untouched
    out = json.loads(path.read_text())
    assert code == 0 and out["datasets"]["gl_heart"]["runs"] == runs
    assert out["datasets"]["gl_heart"]["best_auroc"] == [
        {"client": "cleveland", "metric": "auroc", "ours": "gl", "authors": None}]
    assert "re-derived from the runs" in markdown.read_text() and out["rendered"]["date"]


def test_render_only_without_a_file_stops_with_one_line(tmp_path):
    from benchmarks.gl import main

    with pytest.raises(SystemExit, match="gl.json does not exist"):
        main(["--render-only", "--json", str(tmp_path / "gl.json")])


def test_restart_without_merge_is_refused(tmp_path):
    from benchmarks.gl import main

    with pytest.raises(SystemExit):
        main(["--restart", "--json", str(tmp_path / "gl.json")])


def test_upgrade_records_that_older_runs_averaged_statistics_adopted_the_final_average_and_scored_the_last_epoch():
    old = {"datasets": {"gl_heart": {"seeds": [0], "runs": [], "settings": {"epochs": 10}}}}
    assert upgrade(old)["gl_heart"]["settings"] == {"epochs": 10, "federate_bn_stats": True, "final_average": True,
                                                    "select": "last"}


def test_select_reaches_the_config_and_refuses_covertype(capsys):
    from benchmarks.gl import dataset_config, main

    assert dataset_config("gl_heart", quick=True, device="cpu", select="val_loss").select == "val_loss"
    with pytest.raises(SystemExit):
        main(["--select", "val_auroc", "--json", "x.json"])
    assert "gl_covertype's clients come as fixed files without validation rows" in capsys.readouterr().err


def test_bn_stats_switch_reaches_the_config():
    from benchmarks.gl import dataset_config

    assert dataset_config("gl_heart", quick=True, device="cpu").federate_bn_stats is True
    assert dataset_config("gl_heart", quick=True, device="cpu", bn_stats="local").federate_bn_stats is False


def test_final_switch_defaults_to_algorithm_1_as_written():
    from benchmarks.gl import build_parser, dataset_config

    # unset, the switch keeps GLConfig's default: Algorithm 1's own last-round weights
    assert build_parser().parse_args(["--json", "x.json"]).final is None
    assert dataset_config("gl_heart", quick=True, device="cpu").final_average is False
    assert dataset_config("gl_heart", quick=True, device="cpu", final="average").final_average is True


def test_batches_option_replaces_the_batches_per_epoch_only():
    from benchmarks.gl import build_parser, dataset_config

    assert build_parser().parse_args(["--json", "x.json"]).batches is None
    default = dataset_config("gl_heart", quick=False, device="cpu")
    launched = dataset_config("gl_heart", quick=False, device="cpu", batches=5)
    assert (default.batches, launched.batches) == (15, 5)  # Table 12; the authors' launch command
    assert {k: v for k, v in launched.settings().items() if k != "batches"} == {
        k: v for k, v in default.settings().items() if k != "batches"}


def test_merge_refuses_a_file_run_with_other_batches(tmp_path):
    from benchmarks.gl import dataset_config
    from benchmarks.gl_merge import check_previous

    stored = dataset_config("gl_heart", quick=False, device="cpu").settings()
    previous = {"settings": stored, "runs": [], "runs_from": []}
    with pytest.raises(SystemExit, match="batches"):
        check_previous("gl_heart", previous, dataset_config("gl_heart", quick=False, device="cpu", batches=5),
                       tmp_path / "gl.json")


def _result_file(tmp_path, settings):
    import json

    runs = [{"method": m, "seed": s} for s in (8, 9) for m in ("gl", "fedavg", "local", "centralized")]
    prov = [{"date": "d", "commit": "c", "device": {}, "command": "python -m benchmarks.gl", "seeds": [8, 9]}]
    path = tmp_path / "gl.json"
    path.write_text(json.dumps({"datasets": {"gl_covertype": {"settings": settings, "seeds": [8, 9], "runs": runs,
                                                              "runs_from": prov}}}))
    return path


def test_reuse_takes_only_runs_that_federate_nothing_for_the_asked_seeds(tmp_path):
    # Arrange: a file of the averaged-statistics sweep; this run keeps the statistics local
    from benchmarks.gl import StoredRuns, dataset_config, reused_runs

    averaged = dataset_config("gl_covertype", quick=False, device="cpu")
    path = _result_file(tmp_path, averaged.settings())
    local = dataset_config("gl_covertype", quick=False, device="cpu", bn_stats="local")
    # Act
    runs, provenance = reused_runs("gl_covertype", [9, 10], local, StoredRuns.read(path))
    # Assert: seed 9's Local and Centralized runs, marked; provenance names the file and the methods
    assert sorted((r["method"], r["seed"]) for r in runs) == [("centralized", 9), ("local", 9)]
    assert all(r["reused_from"] == str(path) for r in runs)
    assert provenance == [{"date": "d", "commit": "c", "device": {}, "command": "python -m benchmarks.gl",
                           "seeds": [9], "methods": ["local", "centralized"], "reused_from": str(path)}]


def test_reuse_refuses_a_file_with_other_settings(tmp_path):
    from benchmarks.gl import StoredRuns, dataset_config, reused_runs

    config = dataset_config("gl_covertype", quick=False, device="cpu")
    path = _result_file(tmp_path, {**config.settings(), "epochs": 3})
    with pytest.raises(SystemExit, match="differ from this run's beyond federate_bn_stats"):
        reused_runs("gl_covertype", [8], config, StoredRuns.read(path))


def test_reuse_of_a_missing_file_stops_with_one_line(tmp_path):
    from benchmarks.gl import StoredRuns

    with pytest.raises(SystemExit, match="gl.json does not exist"):
        StoredRuns.read(tmp_path / "gl.json")


def test_missing_data_stops_before_any_run_with_one_line(tmp_path, capsys):
    from benchmarks.gl import main

    with pytest.raises(SystemExit) as stop:
        main(["--datasets", "gl_heart", "--data-dir", str(tmp_path), "--json", str(tmp_path / "gl.json")])
    assert stop.value.code == 2 and "gl_heart" in capsys.readouterr().err
    assert not (tmp_path / "gl.json").exists()


def _no_run(monkeypatch):
    import benchmarks.gl as gl

    def refuse(*args, **kwargs):
        raise AssertionError("a run started before the stored files were checked")

    monkeypatch.setattr(gl, "run_jobs", refuse)
    return gl


@NEEDS_DATA
def test_a_merge_mismatch_on_the_second_dataset_stops_before_the_first_runs(tmp_path, monkeypatch):
    # Arrange: gl_heart's stored settings differ; covertype (run first) would take hours
    import json

    gl = _no_run(monkeypatch)
    stored = tmp_path / "gl.json"
    stored.write_text(json.dumps({"quick": False, "datasets": {"gl_heart": {
        "settings": {"epochs": 3}, "seeds": [0], "runs": [], "runs_from": []}}}))
    before = stored.read_text()
    # Act / Assert
    with pytest.raises(SystemExit, match="gl_heart settings in .*gl.json differ"):
        gl.main(["--merge", "--cover-seeds", "1", "--heart-seeds", "1", "--json", str(stored)])
    assert stored.read_text() == before


@NEEDS_DATA
@pytest.mark.parametrize(("flag", "content", "message"), [
    ("--reuse", None, "--reuse: .* does not exist"),
    ("--reuse", '{"benchmark": "stfl", "datasets": []}', "--reuse: .* is not a gl result file"),
    ("--merge", "[1, 2", "--merge: .* is not a readable result file"),
])
def test_a_stored_file_that_is_not_a_gl_result_stops_before_any_run(tmp_path, monkeypatch, flag, content, message):
    # Arrange
    gl = _no_run(monkeypatch)
    stored, out = tmp_path / "stored.json", tmp_path / "out.json"
    if content is not None:
        stored.write_text(content)
    argv = ["--datasets", "gl_heart", "--heart-seeds", "1"]
    argv += [flag, "--json", str(stored)] if flag == "--merge" else [flag, str(stored), "--json", str(out)]
    # Act / Assert
    with pytest.raises(SystemExit, match=message):
        gl.main(argv)
    assert not out.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--heart-seeds", "0"], "--heart-seeds must be 1..101"),
    (["--cover-seeds", "22"], "--cover-seeds must be 1..21"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--batches", "0"], "--batches must be at least 1"),
])
def test_seed_counts_and_workers_outside_their_range_are_usage_errors(tmp_path, capsys, argv, message):
    from benchmarks.gl import main

    with pytest.raises(SystemExit) as stop:
        main([*argv, "--datasets", "gl_heart", "--json", str(tmp_path / "r.json")])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_gpu_peaks_keep_each_methods_largest_run_and_are_absent_on_cpu():
    gpu_runs = [{"method": "gl", "gpu_peak_mib": 30.0}, {"method": "gl", "gpu_peak_mib": 50.5},
                {"method": "local", "gpu_peak_mib": 10.0}]

    assert gpu_peaks(gpu_runs, ("gl", "fedavg", "local")) == {"gpu_peak_mib": {"gl": 50.5, "local": 10.0}}
    assert gpu_peaks([{"method": "gl"}], ("gl",)) == {}


def test_merge_with_fewer_seeds_asked_keeps_every_stored_seed(tmp_path, monkeypatch):
    # Arrange: seeds 0-2 stored; this run asks for the first seed only (no training: stand-ins)
    import benchmarks.gl as gl

    monkeypatch.setattr(gl, "summarise", lambda name, runs, config, args: {
        "runs": runs, "seeds": sorted({r["seed"] for r in runs})})
    monkeypatch.setattr(gl, "run_jobs", lambda *a, **k: [])
    monkeypatch.setattr(gl, "check_previous", lambda *a, **k: None)
    runs = [_run(m, s) for s in (0, 1, 2) for m in ("gl", "fedavg", "local")]
    previous = {"runs": runs, "runs_from": [{"seeds": [0, 1, 2]}]}
    args = argparse.Namespace(quick=False, device="cpu", bn_stats=None, final=None, batches=None, select="last",
                              json=tmp_path / "gl.json")
    # Act
    out = run_dataset("gl_heart", [0], args, {}, previous, None)
    # Assert: nothing stored is dropped, nothing rerun
    assert out["seeds"] == [0, 1, 2] and len(out["runs"]) == 9 and out["runs_from"] == [{"seeds": [0, 1, 2]}]
