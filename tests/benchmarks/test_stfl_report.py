"""The STFL benchmark's tables: aligned columns, paper figures beside ours, honest verdicts."""

import dataclasses
import json

import pytest

from benchmarks import stfl, stfl_cells
from benchmarks.stfl import merge_reports, summarize
from benchmarks.stfl_merge import STFL_ROWS, check_mergeable, name_stfl_rows
from benchmarks.stfl_report import probe_lines, provenance, speed_lines, table_one, table_three

NAMED_ROWS = {"latent": dict(STFL_ROWS)}  # the settings of a run whose STFL rows have today's names


def _result(acc, seconds=1.0, mode=None):
    out = {"metrics": {"accuracy": acc}, "seconds": seconds, "phases": {"training": seconds},
           "bytes_per_party": {"active": 10, "passive": 20}}
    return {**out, "mode": mode} if mode else out


def _report(stfl_accuracy, ckks_seconds=50.0, ckks_mode="split-NN accuracy, time extrapolated"):
    runs = {"stfl": [_result(stfl_accuracy), _result(stfl_accuracy)],
            "he-vfl ckks": [_result(0.9, ckks_seconds, ckks_mode)] * 2}
    return {"datasets": [{"dataset": "breast", "runs": runs, "summary": summarize(runs)}],
            "device": {"device": "cpu", "cores": 2}}  # the host the time targets are for


def test_every_row_has_as_many_cells_as_the_header():
    lines = [line for line in table_one(_report(0.93)).splitlines() if line.startswith("|")]

    assert len({line.count("|") for line in lines}) == 1


def test_stfl_verdict_follows_the_gap_to_the_paper():
    assert "target within 1.5 points: met" in table_one(_report(0.93))  # paper 92.92
    assert "**not met**" in table_one(_report(0.90))


def _seeds(accuracies):
    runs = {"stfl": [_result(a) for a in accuracies]}
    return {"datasets": [{"dataset": "breast", "runs": runs, "summary": summarize(runs)}]}


@pytest.mark.parametrize("accuracies, where", [
    ((0.93, 0.931, 0.929), "[92.75, 93.25], inside the band"),  # paper 92.92, band 91.42-94.42
    ((0.90, 0.95, 0.93), "across the band's edge: not settled"),  # the mean meets it, the seeds don't settle it
    ((0.96, 0.961, 0.959), "outside the band"),
])
def test_stfl_verdict_says_whether_the_seeds_settle_it(accuracies, where):
    # Act
    text = table_one(_seeds(accuracies))
    # Assert: a t-based 95% interval of the mean over 3 seeds against the band
    assert "; 95% CI of the mean over 3 seeds" in text and where in text


@pytest.mark.parametrize("run, why", [({"quick": True, "settings": {"epochs": 10}}, "a --quick run"),
                                      ({"quick": False, "settings": {"epochs": 50}}, "50 epochs, not the paper's 100")])
def test_a_run_not_at_the_papers_settings_is_not_judged_against_the_targets(run, why):
    # Arrange: results that would meet every target, from a shorter run
    report = {**_report(0.93, ckks_seconds=8.0, ckks_mode=None), **run}
    # Act
    text = table_one(report) + speed_lines(report)
    # Assert
    assert text.count(f"not judged, {why}") == 3 and ": met" not in text


def test_extrapolated_cells_are_marked():
    assert "90.00 ± 0.00 †" in table_one(_report(0.93))
    assert "split-NN accuracy, time extrapolated" in table_three(_report(0.93))


def test_a_gpu_run_adds_the_peak_memory_column_and_a_cpu_run_does_not():
    # Arrange: the same runs, once with the peak a --device cuda run records
    report = _report(0.93)
    gpu = {"datasets": [{**report["datasets"][0], "runs": {
        row: [{**r, "gpu_peak_mib": mib} for r, mib in zip(results, (12.5, 20.0))]
        for row, results in report["datasets"][0]["runs"].items()}}]}
    gpu["datasets"][0]["summary"] = summarize(gpu["datasets"][0]["runs"])
    # Act
    cpu_table, gpu_table = table_three(report), table_three(gpu)
    # Assert: the larger seed's peak, in every row, under its own header
    assert "GPU peak MiB" not in cpu_table
    rows = [line for line in gpu_table.splitlines() if line.startswith("| cancer")]
    assert "GPU peak MiB" in gpu_table and rows and all(line.endswith("| 20.0 |") for line in rows)


def test_speed_verdicts_compare_with_fates_seconds():
    assert "31.6x faster than FATE's 1,737 s (target at least 50x faster than FATE's: **not met**)" in \
        speed_lines(_report(0.93, ckks_seconds=55.0, ckks_mode=None))
    assert "50.0x faster than FATE's 1,737 s (target at least 50x faster than FATE's: met)" in \
        speed_lines(_report(0.93, ckks_seconds=34.74, ckks_mode=None))
    assert "(target at least 50x faster than FATE's: not judged, its time is extrapolated (†), not measured)" in \
        speed_lines(_report(0.93, ckks_seconds=34.74))
    assert "stfl on cancer: 1.0 s (target under 15 s end to end: met)" in speed_lines(_report(0.93))


def test_ckks_is_compared_with_paillier_when_one_run_timed_both():
    # Arrange: both HE-VFL rows from one run; then Paillier from a later run (another host, maybe)
    report = _report(0.93, ckks_seconds=50.0)
    d = report["datasets"][0]
    d["runs"]["he-vfl paillier"] = [_result(0.9, 1750.0, "split-NN accuracy, time extrapolated")] * 2
    d["summary"] = summarize(d["runs"])
    same = speed_lines(report)
    d["row_runs"] = {"he-vfl paillier": {"date": "later"}}
    # Act
    apart = speed_lines(report)
    # Assert
    assert ("he-vfl ckks on cancer: 35.0x faster than he-vfl paillier (1,750.0 s, its time extrapolated) "
            "in the same run") in same
    assert "than he-vfl paillier" not in apart and "than he-vfl paillier" not in speed_lines(_report(0.93))


def _file(datasets, date, quick=False):
    return {"date": date, "commit": date, "quick": quick, "device": {}, "settings": {}, "command": date,
            "datasets": [{"dataset": d, "runs": {}, "summary": {}} for d in datasets]}


def test_merge_keeps_old_datasets_with_their_own_run_and_replaces_rerun_ones():
    # Arrange
    old = _file(["breast", "default_credit"], "old")
    new = _file(["give_credit", "breast"], "new")
    for d in new["datasets"]:
        d["run"] = {k: new[k] for k in ("date", "commit", "quick", "device", "settings", "command")}
    # Act
    merged = merge_reports(old, new)
    # Assert
    assert [d["dataset"] for d in merged["datasets"]] == ["breast", "default_credit", "give_credit"]
    assert [d["run"]["date"] for d in merged["datasets"]] == ["new", "old", "new"]
    assert "Datasets come from separate runs" in provenance(merged)


def test_each_dataset_from_its_own_run_names_the_host_it_ran_on():
    # Arrange: two datasets timed on different CPUs
    old = _file(["default_credit"], "old")
    old["device"] = {"cpu": "Intel(R) Xeon(R) Processor", "load_average_1m": 0.5}
    new = _file(["breast"], "new")
    new["device"] = {"cpu": "AMD EPYC"}
    new["settings"] = {"workers": 4}
    for report in (old, new):
        report["datasets"][0]["run"] = {k: report[k] for k in ("date", "commit", "quick", "device", "settings",
                                                                "command")}
    # Act
    text = provenance(merge_reports(old, new))
    # Assert
    assert "commit `new`, on AMD EPYC, 4 cells at once, so its seconds are upper bounds, `new`" in text
    assert "commit `old`, on Intel(R) Xeon(R) Processor (load 0.5 at the start), `old`" in text


def test_render_only_rewrites_the_markdown_from_the_stored_runs_alone(tmp_path, monkeypatch):
    # Arrange: a stored report, and no data folder (nothing may run)
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    report = {**_report(0.93), "date": "d", "commit": "c", "quick": False, "settings": {}, "command": "cmd",
              "device": {"device": "cpu", "cpu": "AMD EPYC", "cores": 2}}
    stored = tmp_path / "stfl.json"
    stored.write_text(json.dumps(report))
    # Act
    code = stfl.main(["--render-only", "--json", str(stored)])
    # Assert
    text = (tmp_path / "stfl.md").read_text()
    assert code == 0 and "## Table I" in text and "AMD EPYC" in text
    assert json.loads(stored.read_text()) == report


def _stored(report, device):
    return {**report, "date": "d", "commit": "c", "quick": False, "settings": NAMED_ROWS, "command": "cmd",
            "device": {"device": device, "cpu": "Xeon", "cores": 16, **({"gpu": "H200"} if device == "cuda" else {})}}


def test_a_gpu_run_beside_adds_its_seconds_and_memory_to_table_three(tmp_path, monkeypatch):
    # Arrange: a CPU report with STFL and HE-VFL, a GPU report with STFL alone
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    cpu, gpu = tmp_path / "stfl.json", tmp_path / "stfl_cuda.json"
    cpu.write_text(json.dumps(_stored(_report(0.93), "cpu")))
    runs = {"stfl": [{**_result(0.95, seconds=3.0), "gpu_peak_mib": 128.0}] * 3}
    gpu.write_text(json.dumps({**_stored({"datasets": [{"dataset": "breast", "runs": runs,
                                                         "summary": summarize(runs)}]}, "cuda"),
                               "settings": {**NAMED_ROWS, "workers": 14, "cuda_graphs": True}}))
    # Act
    code = stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(gpu)])
    # Assert: STFL's row has the GPU's mean seconds, seeds and memory; HE-VFL's, a dash
    text = (tmp_path / "stfl.md").read_text()
    rows = {line.split("|")[2].strip(): line for line in text.splitlines() if line.startswith("| cancer")}
    assert code == 0 and "GPU s (n)" in text and "on an H200 (host CPU: Xeon, 16 cores)" in text
    assert rows["stfl"].endswith("| 3.0 (3) | 128.0 |") and rows["he-vfl ckks"].endswith("| — | — |")
    assert "(commit `c`, CUDA graphs, 14 cells at once, so its seconds are upper bounds)" in text


def _gpu_file(path):
    runs = {"stfl": [{**_result(0.95, seconds=3.0), "gpu_peak_mib": 128.0}] * 3}
    path.write_text(json.dumps(_stored({"datasets": [{"dataset": "breast", "runs": runs,
                                                      "summary": summarize(runs)}]}, "cuda")))
    return path


@pytest.mark.parametrize(("change", "message"), [
    ({"quick": True}, "is a --quick run of 100 epochs; this table is a run of 100"),
    ({"settings": {**NAMED_ROWS, "epochs": 10}}, "is a run of 10 epochs; this table is a run of 100"),
])
def test_a_gpu_file_of_other_settings_is_refused(tmp_path, monkeypatch, change, message):
    # Arrange: a quick or shorter GPU run would sit beside the full table unlabelled
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    cpu, gpu = tmp_path / "stfl.json", _gpu_file(tmp_path / "stfl_cuda.json")
    cpu.write_text(json.dumps(_stored(_report(0.93), "cpu")))
    gpu.write_text(json.dumps({**json.loads(gpu.read_text()), **change}))
    # Act / Assert
    with pytest.raises(SystemExit, match=message):
        stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(gpu)])


def test_the_gpu_file_is_recorded_so_a_later_render_keeps_its_columns(tmp_path, monkeypatch):
    # Arrange: one render with --gpu-json
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    cpu, gpu = tmp_path / "stfl.json", _gpu_file(tmp_path / "stfl_cuda.json")
    cpu.write_text(json.dumps(_stored(_report(0.93), "cpu")))
    stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(gpu)])
    (tmp_path / "stfl.md").unlink()
    # Act: a render without the flag
    code = stfl.main(["--render-only", "--json", str(cpu)])
    # Assert: the file names the GPU run, and the Markdown still has its columns
    assert code == 0 and json.loads(cpu.read_text())["gpu_json"] == str(gpu)
    assert "GPU s (n)" in (tmp_path / "stfl.md").read_text()


def test_a_merged_run_keeps_the_recorded_gpu_columns(tmp_path, monkeypatch):
    # Arrange: a stored cheap run that records a GPU file
    from benchmarks.stfl_runs import run_centralized_row

    monkeypatch.setattr(stfl_cells, "methods", lambda cfg: [("centralized", False, run_centralized_row)])
    monkeypatch.setattr(stfl, "load_datasets", lambda cfg: {"breast": _tiny_dataset(80)})
    monkeypatch.setattr(stfl, "seal_rotation_ms", lambda: 1.0)
    out, gpu = tmp_path / "stfl.json", _gpu_file(tmp_path / "stfl_cuda.json")
    argv = ["--datasets", "breast", "--seeds", "1", "--epochs", "2", "--json", str(out)]
    stfl.main([*argv, "--gpu-json", str(gpu)])
    # Act: the same rows rerun with --merge, no --gpu-json
    stfl.main([*argv, "--merge"])
    # Assert
    assert json.loads(out.read_text())["gpu_json"] == str(gpu)
    assert "GPU s (n)" in (tmp_path / "stfl.md").read_text()


def test_a_recorded_gpu_file_that_is_gone_leaves_the_columns_out_and_says_so(tmp_path, monkeypatch, capsys):
    # Arrange: a stored report naming a GPU file that was removed since
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    cpu = tmp_path / "stfl.json"
    cpu.write_text(json.dumps({**_stored(_report(0.93), "cpu"), "gpu_json": str(tmp_path / "gone.json")}))
    # Act
    code = stfl.main(["--render-only", "--json", str(cpu)])
    # Assert
    assert code == 0 and "GPU s (n)" not in (tmp_path / "stfl.md").read_text()
    assert "gone.json recorded in" in capsys.readouterr().err


def test_a_cpu_run_is_refused_as_the_gpu_columns(tmp_path):
    cpu, other = tmp_path / "stfl.json", tmp_path / "other.json"
    cpu.write_text(json.dumps(_stored(_report(0.93), "cpu")))
    other.write_text(cpu.read_text())

    with pytest.raises(SystemExit, match="is not a --device cuda run"):
        stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(other)])


def test_render_only_without_a_stored_file_is_a_one_line_error(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        stfl.main(["--render-only", "--json", str(tmp_path / "none.json")])


def test_merge_refuses_to_mix_quick_and_full_results():
    with pytest.raises(ValueError, match="quick"):
        merge_reports(_file(["breast"], "old", quick=True), _file(["give_credit"], "new"))


def test_a_missing_data_folder_stops_the_benchmark_in_one_line_before_any_run(tmp_path, monkeypatch):
    monkeypatch.delenv("SECUREFL_DATA", raising=False)
    out = tmp_path / "stfl.json"

    with pytest.raises(SystemExit) as stop:
        stfl.main(["--datasets", "breast", "--json", str(out)])

    assert "SECUREFL_DATA" in str(stop.value.code) and "\n" not in str(stop.value.code)
    assert not out.exists()


@pytest.mark.parametrize(("stored", "message"), [
    (None, "does not exist"),
    ("{not json", "not a readable result file"),
    (json.dumps({"benchmark": "chfl", "datasets": []}), "not a stfl result file"),
    (json.dumps({"benchmark": "stfl", "quick": True, "datasets": []}), "cannot mix a --quick result"),
])
def test_merge_checks_the_stored_file_before_running_anything(tmp_path, monkeypatch, stored, message):
    # Arrange: a run would fail the test; the stored file is as given
    def no_run(cfg):
        raise AssertionError("the benchmark ran before --merge was checked")

    monkeypatch.setattr(stfl, "load_datasets", no_run)
    out = tmp_path / "stfl.json"
    if stored is not None:
        out.write_text(stored)
    # Act / Assert: stopped, the stored file untouched
    with pytest.raises(SystemExit, match=message):
        stfl.main(["--datasets", "give_credit", "--merge", "--json", str(out)])
    assert (out.read_text() if stored is not None else None) == stored


def test_an_unknown_he_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        stfl.parse_args(["--he", "ckks,rsa"])
    assert stop.value.code == 2 and "--he: unknown backend 'rsa'" in capsys.readouterr().err


def test_bytes_project_setup_once_training_messages_per_step_and_the_rest_per_batch():
    from benchmarks.stfl_runs import project_bytes

    # Arrange: 2 timed training steps and 1 test batch; the full run has 10 steps and 3 test batches
    tags = {"psi/singles": {"bytes": 100, "messages": 1}, "interactive/hello": {"bytes": 1000, "messages": 1},
            "interactive/x": {"bytes": 30, "messages": 3}, "interactive/x_back": {"bytes": 20, "messages": 2}}
    # Act
    projected = project_bytes(tags, timed_steps=2, steps=10, timed_batches=3, batches=13)
    # Assert: 100 + 1000 once, 30 x 13/3 per batch, 20 x 10/2 per step
    assert projected == 100 + 1000 + 130 + 100


def _tiny_dataset(rows=80, name="breast"):
    import numpy as np

    from securefl.data import PartyTable, VerticalDataset

    rng = np.random.default_rng(0)
    xa, xp = rng.normal(size=(rows, 3)), rng.normal(size=(rows, 2))
    ids = tuple(f"u{i:03d}" for i in range(rows))
    labels = (xa[:, 0] + xp[:, 0] > 0).astype(np.int64)
    return VerticalDataset(name, PartyTable("active", ids, xa, ("a0", "a1", "a2"), labels=labels),
                           (PartyTable("passive", ids, xp, ("p0", "p1")),))


def test_cells_on_workers_give_the_results_of_cells_run_one_by_one():
    # Arrange: two cheap methods, 2 seeds, 3 epochs (the spawned workers read the rows from the config)
    cfg = stfl.parse_args(["--datasets", "breast", "--seeds", "2", "--epochs", "3", "--rows", "centralized,stfl",
                           "--json", "unused.json"])
    datasets = {"breast": _tiny_dataset(80), "default_credit": _tiny_dataset(120, "default_credit")}
    # Act
    alone = stfl.run_datasets(datasets, cfg)
    pooled = stfl.run_datasets(datasets, dataclasses.replace(cfg, workers=3))
    # Assert: each dataset's rows, seeds in order, the same accuracies
    def accuracies(report):
        return {row: [r["metrics"]["accuracy"] for r in runs] for row, runs in report["runs"].items()}

    assert [d["dataset"] for d in pooled] == ["breast", "default_credit"]
    assert [list(d["runs"]) for d in pooled] == [["centralized", "stfl"]] * 2
    assert [accuracies(d) for d in pooled] == [accuracies(d) for d in alone]
    assert [r["seed"] for r in pooled[1]["runs"]["stfl"]] == [0, 1]
    assert {r["dataset"] for d in pooled for runs in d["runs"].values() for r in runs if d["dataset"] == "breast"} \
        == {"breast"}


@pytest.mark.parametrize("flags, graphs", [([], False), (["--cuda-graphs"], True), (["--no-cuda-graphs"], False)])
def test_cuda_graphs_follow_the_device_unless_asked(flags, graphs):
    # Act: on the CPU graphs change nothing, so the settings record them off unless asked for
    cfg = stfl.parse_args(["--device", "cpu", *flags, "--json", "unused.json"])
    # Assert
    assert cfg.cuda_graphs is graphs


def test_cuda_graphs_are_on_for_a_cuda_device_by_default(monkeypatch):
    # Arrange: accept --device cuda on this machine, whatever it has
    monkeypatch.setattr(stfl, "device_name", lambda parser, value: value)
    # Act
    on, off = (stfl.parse_args(["--device", "cuda", *flags, "--json", "unused.json"])
               for flags in ([], ["--no-cuda-graphs"]))
    # Assert
    assert (on.cuda_graphs, off.cuda_graphs) == (True, False)


def test_workers_below_one_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        stfl.parse_args(["--workers", "0"])
    assert stop.value.code == 2 and "--workers must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--he-timed-steps", "1"], "--he-timed-steps must be at least 2, got 1"),
    (["--ckks-max-steps", "-1"], "--ckks-max-steps and --paillier-max-steps must be at least 0"),
    (["--paillier-max-steps", "-5"], "--ckks-max-steps and --paillier-max-steps must be at least 0"),
])
def test_step_counts_out_of_range_are_usage_errors(capsys, flags, message):
    # Act: one timed step would leave no step to project the later ones from
    with pytest.raises(SystemExit) as stop:
        stfl.parse_args([*flags, "--json", "unused.json"])
    # Assert
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_two_timed_steps_are_accepted():
    cfg = stfl.parse_args(["--he-timed-steps", "2", "--json", "unused.json"])

    assert cfg.he_timed_steps == 2


def test_rows_keeps_the_named_rows_in_table_one_order():
    cfg = stfl.parse_args(["--he", "ckks", "--rows", "stfl,he-vfl ckks", "--json", "unused.json"])

    assert [name for name, _, _ in stfl_cells.methods(cfg)] == ["he-vfl ckks", "stfl"]
    assert cfg.rows == ("stfl", "he-vfl ckks")


def test_an_unknown_row_is_a_usage_error_naming_the_choices(capsys):
    with pytest.raises(SystemExit) as stop:
        stfl.parse_args(["--he", "ckks", "--rows", "stfl,he-vfl paillier"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--rows: unknown row 'he-vfl paillier'" in err and "he-vfl ckks" in err


def test_table_one_shows_a_row_that_only_a_later_dataset_ran():
    # Arrange: breast ran STFL alone; credit ran STFL and HE-VFL
    first = {"stfl": [_result(0.93)]}
    later = {"stfl": [_result(0.93)], "he-vfl ckks": [_result(0.92)]}
    report = {"datasets": [{"dataset": "breast", "runs": first, "summary": summarize(first)},
                           {"dataset": "give_credit", "runs": later, "summary": summarize(later)}]}
    # Act
    rows = [line for line in table_one(report).splitlines() if line.startswith("| he-vfl ckks")]
    # Assert: the HE-VFL row, a dash under breast
    assert len(rows) == 1 and "| — | 92.04 |" in rows[0] and "92.00 (n=1)" in rows[0]


def test_a_stopped_run_resumes_with_its_finished_cells_and_runs_only_the_rest(tmp_path, monkeypatch, capsys):
    # Arrange: two cheap methods x 2 seeds; the first run stops in its third cell
    from benchmarks.stfl_runs import run_centralized_row, run_stfl_row

    monkeypatch.setattr(stfl_cells, "methods", lambda cfg: [("centralized", False, run_centralized_row),
                                                        ("stfl", False, run_stfl_row)])
    monkeypatch.setattr(stfl, "load_datasets", lambda cfg: {"breast": _tiny_dataset(80)})
    monkeypatch.setattr(stfl, "seal_rotation_ms", lambda: 1.0)
    real, ran = stfl_cells.run_cell, []

    def counted(*job):
        ran.append(job[3:])
        if len(ran) == 3 and stop_early:
            raise KeyboardInterrupt
        return real(*job)

    monkeypatch.setattr(stfl_cells, "run_cell", counted)
    out = tmp_path / "stfl.json"
    argv = ["--datasets", "breast", "--seeds", "2", "--epochs", "2", "--json", str(out)]
    stop_early = True
    with pytest.raises(KeyboardInterrupt):
        stfl.main(argv)
    assert not out.exists() and (tmp_path / "stfl.cells.jsonl").exists()
    assert "the same command with --resume" in capsys.readouterr().err
    # Act
    stop_early, ran[:] = False, []
    stfl.main([*argv, "--resume"])
    resumed = json.loads(out.read_text())
    ran[:] = []
    stfl.main(argv)
    whole = json.loads(out.read_text())
    # Assert: the resumed run ran the two cells left; its tables equal an uninterrupted run's
    assert resumed["resumed_cells"] == 2 and "resumed_cells" not in whole and len(ran) == 4
    def table(report):
        return {row: [r["metrics"]["accuracy"] for r in runs] for row, runs in report["datasets"][0]["runs"].items()}

    assert table(resumed) == table(whole)
    assert not (tmp_path / "stfl.cells.jsonl").exists()


@pytest.mark.parametrize("settings, row", [({}, "stfl (means)"), ({"latent": "mean"}, "stfl (means)"),
                                           ({"latent": "sample"}, "stfl"), (NAMED_ROWS, "stfl")])
def test_an_older_files_stfl_row_is_named_by_what_its_run_sent(settings, row):
    # Arrange: a file from before Table I had two STFL rows (settings without "latent": means)
    report = {**_report(0.93), "settings": settings}
    # Act: named twice, as a file read, merged and read again would be
    named = name_stfl_rows(name_stfl_rows(report))
    # Assert
    d = named["datasets"][0]
    assert set(d["runs"]) == set(d["summary"]) == {row, "he-vfl ckks"}


def _dataset_run(report, date, rows):
    """Give ``report``'s breast dataset the run metadata of a run on ``date`` with only ``rows``."""
    d = report["datasets"][0]
    d["runs"] = {row: d["runs"][row] for row in rows}
    d["summary"] = summarize(d["runs"])
    d["run"] = {"date": date, "commit": date, "quick": False, "device": {}, "settings": NAMED_ROWS,
                "command": f"cmd {date}"}
    return {**report, "quick": False}


def test_rows_run_alone_replace_only_those_rows_and_say_which_run_made_them():
    # Arrange: a stored dataset with HE-VFL and STFL; a later run of STFL alone, other accuracies
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    new = _dataset_run(_report(0.95), "new", ["stfl"])
    # Act
    merged = merge_reports(old, new)
    # Assert: HE-VFL from the old run, STFL from the new one, the summary made anew
    d = merged["datasets"][0]
    assert d["run"]["date"] == "old" and set(d["row_runs"]) == {"stfl"}
    assert d["summary"]["stfl"]["accuracy_mean"] == pytest.approx(95.0)
    assert d["summary"]["he-vfl ckks"] == old["datasets"][0]["summary"]["he-vfl ckks"]
    assert "  - rows stfl from a later run: new, commit `new`, `cmd new`" in provenance(merged)


def test_the_speed_probe_of_rows_rerun_later_is_shown_beside_the_datasets():
    # Arrange: the dataset's run probed 0.9 ms, the later run of its STFL row 2.1 ms
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    old["datasets"][0]["run"]["seal_rotation_ms"] = 0.9
    new = _dataset_run(_report(0.95), "new", ["stfl"])
    new["datasets"][0]["run"]["seal_rotation_ms"] = 2.1
    # Act
    line = probe_lines(merge_reports(old, new))
    # Assert
    assert "cancer 0.90 ms, cancer (stfl) 2.10 ms." in line


def test_rows_joining_a_stored_dataset_need_its_seeds_and_epochs():
    # Arrange: the stored dataset ran 2 seeds of 100 epochs
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    # Act
    why = check_mergeable(old, ("breast",), ["stfl"], seeds=5, epochs=100)
    # Assert: refused with what to pass; a run of every row it holds, or of another dataset, may go on
    assert why is not None and "breast" in why and "--seeds 2 --epochs 100" in why
    assert check_mergeable(old, ("breast",), ["stfl"], seeds=2, epochs=100) is None
    assert check_mergeable(old, ("breast",), ["stfl", "he-vfl ckks"], seeds=5, epochs=100) is None
    assert check_mergeable(old, ("give_credit",), ["stfl"], seeds=5, epochs=100) is None


def test_rows_joining_a_stored_dataset_need_its_device():
    # Arrange: the stored dataset's rows ran on the CPU
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    old["datasets"][0]["run"]["settings"] = {**old["datasets"][0]["run"].get("settings", {}), "device": "cpu",
                                             "epochs": 100}
    # Act
    why = check_mergeable(old, ("breast",), ["stfl"], seeds=2, epochs=100, device="cuda")
    # Assert
    assert why is not None and "keeps rows run on --device cpu; rows run on cuda" in why
    assert check_mergeable(old, ("breast",), ["stfl"], seeds=2, epochs=100, device="cpu") is None


def test_both_stfl_rows_get_a_verdict_and_a_table_three_row():
    # Arrange: draws at the paper's accuracy, means above it
    report = _report(0.93)
    d = report["datasets"][0]
    d["runs"]["stfl (means)"] = [_result(0.97), _result(0.97)]
    d["summary"] = summarize(d["runs"])
    # Act
    one, three = table_one(report), table_three(report)
    # Assert
    assert "- STFL on cancer: 93.00% vs paper 92.92% (+0.08 points; target within 1.5 points: met)" in one
    assert "- STFL sending posterior means on cancer: 97.00% vs paper 92.92% (+4.08 points" in one
    assert "| cancer | stfl (means) |" in three and "| cancer | stfl |" in three


def test_rows_that_cannot_join_the_stored_dataset_are_refused_before_any_run(tmp_path, monkeypatch):
    # Arrange: a stored breast with 2 seeds of two rows; a run of one row with 3 seeds would fail the test
    def no_run(cfg):
        raise AssertionError("the benchmark ran before --merge was checked")

    monkeypatch.setattr(stfl, "load_datasets", no_run)
    stored = tmp_path / "stfl.json"
    stored.write_text(json.dumps({**_dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"]), "benchmark": "stfl"}))
    before = stored.read_text()
    # Act / Assert: a one-line refusal naming the flags to pass, the file untouched
    with pytest.raises(SystemExit, match=r"--merge: breast keeps rows run with \[2\] seeds"):
        stfl.main(["--datasets", "breast", "--rows", "stfl", "--seeds", "3", "--merge", "--json", str(stored)])
    assert stored.read_text() == before


def test_he_vfl_steps_count_the_training_rows_both_parties_hold():
    # Arrange: the passive party lacks two of the active party's IDs
    from baselines.he_vfl import HEVFLConfig
    from baselines.splitnn import SplitNNConfig, train_splitnn
    from benchmarks.stfl_runs import training_steps
    from tests.baselines.test_splitnn import tiny_split

    split = tiny_split(rows=200)
    trained = train_splitnn(split, SplitNNConfig(epochs=1))["train_rows"]
    # Act
    steps = training_steps(split, 3, 1)
    # Assert: the schedule the protocol runs, not one over every training ID
    assert trained < len(split.train_ids) and steps == HEVFLConfig(epochs=3, batch_size=1).total_steps(trained)
