"""Chunked CHFL benchmark runs: --merge keeps stored runs, --max-runs cuts whole runs, mismatches stop."""

import json
from dataclasses import asdict

import pytest

import benchmarks.chfl as chfl
import benchmarks.chfl_jobs as chfl_jobs
from benchmarks.chfl import parse_args
from benchmarks.chfl_jobs import plan
from benchmarks.chfl_merge import load_previous, todo

METHODS = ("common", "local", "chfl_mu0", "chfl", "simple")


def _fake_run_job(job, cfg):
    """A job's output without training: every client scores 0.5 + lr on validation and test."""
    clients = {f"c{i}": 0.5 + job.lr for i in range(job.n_clients)}
    selected = {c: {"variant": "x", "round": 1, "val": v, "last_round_test": v} for c, v in clients.items()}
    return {"job": asdict(job), "accuracy": {m: 0.5 + job.lr for m in METHODS},
            "clients": {m: dict(clients) for m in METHODS}, "selected": {m: dict(selected) for m in METHODS},
            "last_round_accuracy": {m: 0.5 for m in METHODS}, "round_seconds": [1.0] * job.rounds,
            "aggregation_seconds": [0.1] * job.rounds, "bytes": 10, "seconds": 1.0,
            "n_common": 3, "n_unique": 2, "common_features": ["pixel_1"]}


def _args(path, *extra):
    return ["--quick", "--workers", "1", "--lrs", "0.001,0.003", "--json", str(path), *extra]


def test_max_runs_keeps_every_learning_rate_of_a_run_together():
    # Arrange
    cfg = parse_args(["--splits", "3", "--runs", "1", "--lrs", "0.001,0.003", "--clients", "5", "--ratios", "0.3"])
    jobs = plan(cfg, ["digits"])
    # Act
    first = todo(jobs, [], max_runs=2)
    rest = todo(jobs, [{"job": asdict(j)} for j in first], max_runs=None)
    # Assert: 2 runs x 2 lrs now, the third split and both timing jobs later, nothing twice
    assert [(j.feature_seed, j.lr) for j in first] == [(0, 0.001), (0, 0.003), (1, 0.001), (1, 0.003)]
    assert len(rest) == len(jobs) - 4 and not {asdict(j)["feature_seed"] for j in rest
                                               if j.experiment == "table2"} & {0, 1}


def test_merge_in_two_chunks_equals_one_go(tmp_path, monkeypatch):
    # Arrange
    monkeypatch.setattr(chfl_jobs, "run_job", _fake_run_job)
    chunked, whole = tmp_path / "chunked.json", tmp_path / "whole.json"
    # Act
    chfl.main(_args(chunked, "--max-runs", "1"))
    partial = json.loads(chunked.read_text())
    chfl.main(_args(chunked, "--merge"))
    chfl.main(_args(whole))
    merged, one_go = json.loads(chunked.read_text()), json.loads(whole.read_text())
    # Assert
    assert partial["missing_jobs"] > 0 and len(partial["runs"]) == 2  # one run at two lrs
    assert merged["missing_jobs"] == 0 and len(merged["chunks"]) == 2
    assert [c["jobs"] for c in merged["chunks"]] == [2, len(one_go["runs"]) - 2]
    assert merged["summary"] == one_go["summary"]
    assert "Chunks (each run of the command" in chunked.with_suffix(".md").read_text()


def test_partial_file_says_it_is_incomplete(tmp_path, monkeypatch):
    monkeypatch.setattr(chfl_jobs, "run_job", _fake_run_job)
    path = tmp_path / "part.json"
    chfl.main(_args(path, "--max-runs", "1"))
    assert "**Incomplete:" in path.with_suffix(".md").read_text()


@pytest.mark.parametrize("change, message", [
    (lambda r: r["settings"].update(lrs=[0.001]), "other lrs"),
    (lambda r: r["settings"].update(rounds=9), "other rounds"),
    (lambda r: r["settings"].update(hidden=[64, 32]), "other hidden"),
    (lambda r: r["settings"].update(batch_size=128, local_epochs=1), "other batch_size, local_epochs"),
    (lambda r: r["settings"].pop("aggregation"), "other aggregation"),
    (lambda r: r.update(benchmark="gl"), "not a chfl result file"),
    (lambda r: r["runs"][0]["job"].update(feature_seed=99), "1 runs this plan does not include"),
    (lambda r: r["runs"].append("not a run"), "the file's runs are not chfl runs"),
    (lambda r: r["runs"][0].update(job=[1, 2]), "the file's runs are not chfl runs"),
])
def test_merge_refuses_a_file_it_cannot_extend_and_writes_nothing(tmp_path, monkeypatch, change, message):
    # Arrange
    monkeypatch.setattr(chfl_jobs, "run_job", _fake_run_job)
    path = tmp_path / "r.json"
    chfl.main(_args(path, "--max-runs", "1"))
    report = json.loads(path.read_text())
    change(report)
    path.write_text(json.dumps(report))
    before = path.read_text()
    # Act / Assert
    with pytest.raises(SystemExit, match=message):
        chfl.main(_args(path, "--merge"))
    assert path.read_text() == before


def test_merge_accepts_a_file_whose_plan_is_sized_differently(tmp_path, monkeypatch):
    # Arrange: a stored file whose plan-size settings all differ from this invocation's
    monkeypatch.setattr(chfl_jobs, "run_job", _fake_run_job)
    path = tmp_path / "r.json"
    chfl.main(_args(path, "--max-runs", "1"))
    stored = json.loads(path.read_text())
    sized = {"datasets": ["x"], "splits": 9, "runs": 9, "sweep_splits": 9, "clients": [9], "ratios": [0.9],
             "workers": 9, "render_only": True}
    path.write_text(json.dumps({**stored, "settings": {**stored["settings"], **sized}}))
    cfg = parse_args(_args(path, "--merge"))
    settings = chfl.config_report("chfl", cfg, None, paths=("json_path", "markdown_path", "data_dir", "merge",
                                                            "max_runs"), extra=chfl.FIXED_SETTINGS)["settings"]
    # Act
    old = load_previous(path, settings, plan(cfg, ["digits"]))
    # Assert
    assert len(old["runs"]) == 2


def test_max_runs_keeps_the_secure_and_plain_timing_jobs_together(tmp_path):
    # Arrange: every job but the two timing ones has run
    jobs = plan(parse_args(_args(tmp_path / "r.json")), ["digits"])
    done = [{"job": asdict(j)} for j in jobs if j.experiment != "timing"]
    # Act
    chunk = todo(jobs, done, max_runs=1)
    # Assert
    assert [(j.experiment, j.secure) for j in chunk] == [("timing", True), ("timing", False)]


def test_timing_jobs_run_alone_after_the_training_pool(tmp_path, monkeypatch):
    # Arrange: record each batch of jobs handed to the runner, and its number of workers
    calls = []

    def fake_run_all(jobs, cfg):
        calls.append(([j.experiment for j in jobs], cfg.workers))
        return [_fake_run_job(j, cfg) for j in jobs]

    monkeypatch.setattr(chfl_jobs, "run_all", fake_run_all)
    # Act
    chfl.main(_args(tmp_path / "r.json", "--workers", "2"))
    # Assert: the pool gets no timing job; the timing jobs come last, one at a time in one process
    *pool, timing = calls
    assert pool and all("timing" not in experiments and workers == 2 for experiments, workers in pool)
    assert timing == (["timing", "timing"], 1)


def test_merge_needs_an_existing_file(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        chfl.main(_args(tmp_path / "none.json", "--merge"))


@pytest.mark.parametrize("data_dir", ["missing", "empty"])
def test_covertype_without_its_file_stops_instead_of_reporting_not_run(tmp_path, data_dir):
    # Arrange: covertype should be in the data folder; sensorless is registered as absent here
    folder = tmp_path / "data"
    if data_dir == "empty":
        folder.mkdir()
    out = tmp_path / "r.json"
    # Act / Assert: nothing written
    with pytest.raises(SystemExit, match="dataset 'covertype'"):
        chfl.main(["--datasets", "covertype,sensorless", "--data-dir", str(folder), "--json", str(out)])
    assert not out.exists()


def test_a_dataset_registered_as_absent_is_reported_not_run(tmp_path, monkeypatch):
    # Arrange
    monkeypatch.setattr(chfl_jobs, "run_all", lambda jobs, cfg: [])
    out = tmp_path / "r.json"
    (tmp_path / "data").mkdir()
    # Act
    chfl.main(["--datasets", "sensorless", "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    # Assert
    assert "not run here" in json.loads(out.read_text())["not_run"]["sensorless"]


def test_a_file_from_before_the_lr_grid_extends_a_plan_with_its_single_lr(tmp_path):
    # Arrange: an old header had "lr", not "lrs"
    cfg = parse_args(["--quick", "--lrs", "0.001"])
    jobs = plan(cfg, ["digits"])
    run = _fake_run_job(jobs[0], cfg)
    run["job"].pop("lr")  # jobs written before the lr grid had no lr field
    old = {"benchmark": "chfl", "runs": [run],
           "settings": {"rounds": 4, "mus": [0.5, 1.0], "lr": 0.001, "timing_rounds": 2, "device": "cpu",
                        "quick": True}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    settings = {"rounds": 4, "mus": (0.5, 1.0), "lrs": (0.001,), "timing_rounds": 2, "device": "cpu", "quick": True}
    # Act
    loaded = load_previous(path, settings, jobs)
    # Assert: the stored job is the planned one, so it is kept and not run again
    assert loaded["runs"][0]["job"] == json.loads(json.dumps(asdict(jobs[0])))
    assert jobs[0] not in todo(jobs, loaded["runs"], None)


def test_bad_max_runs_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as err:
        parse_args(["--max-runs", "0"])
    assert err.value.code == 2 and "--max-runs" in capsys.readouterr().err
