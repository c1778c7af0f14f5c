"""The STFL benchmark's result files: inputs never overwritten, GPU columns checked against the stored table,
time targets judged only on their host, and cells kept by --resume named with when and where they ran."""

import json
from types import SimpleNamespace

import pytest

from benchmarks import stfl, stfl_cells
from benchmarks.stfl import merge_reports, summarize
from benchmarks.stfl_merge import check_mergeable
from benchmarks.stfl_report import provenance, speed_lines, to_markdown
from tests.benchmarks.test_stfl_report import NAMED_ROWS, _dataset_run, _gpu_file, _report, _result, _stored

QUICK = {"quick": True, "settings": {**NAMED_ROWS, "epochs": 10}}  # what a --quick run records


@pytest.mark.parametrize("flags", [
    ["--json", "{gpu}"],  # a CPU run over the GPU file it shows beside its table
    ["--render-only", "--json", "{cpu}", "--markdown", "{gpu}"],  # the Markdown over it
])
def test_a_run_never_writes_over_the_gpu_file_it_reads(tmp_path, monkeypatch, capsys, flags):
    # Arrange
    monkeypatch.setattr(stfl, "load_datasets", lambda cfg: pytest.fail("the benchmark ran"))
    cpu, gpu = tmp_path / "stfl.json", _gpu_file(tmp_path / "gpu.json")
    cpu.write_text(json.dumps(_stored(_report(0.93), "cpu")))
    before = gpu.read_text()
    argv = [f.format(cpu=cpu, gpu=gpu) for f in flags]
    # Act
    with pytest.raises(SystemExit) as stop:
        stfl.main(["--quick", "--rows", "centralized", *argv, "--gpu-json", str(gpu)])
    # Assert: a one-line usage error naming both flags; the GPU file as it was
    assert stop.value.code == 2 and "would replace --gpu-json" in capsys.readouterr().err
    assert gpu.read_text() == before


def test_render_only_never_writes_the_markdown_over_the_gpu_file_the_table_records(tmp_path):
    # Arrange: a stored table recording its GPU file
    cpu, gpu = tmp_path / "stfl.json", _gpu_file(tmp_path / "gpu.json")
    cpu.write_text(json.dumps({**_stored(_report(0.93), "cpu"), "gpu_json": str(gpu)}))
    before = gpu.read_text()
    # Act / Assert
    with pytest.raises(SystemExit, match="--markdown .* would replace the GPU run .*gpu.json recorded in"):
        stfl.main(["--render-only", "--json", str(cpu), "--markdown", str(gpu)])
    assert gpu.read_text() == before


def test_render_only_checks_the_gpu_file_against_the_stored_table_not_the_command_line(tmp_path):
    # Arrange: a stored --quick table of 10 epochs; a GPU run like it, and a full one of 100 epochs
    cpu, like, full = tmp_path / "q.json", _gpu_file(tmp_path / "like.json"), _gpu_file(tmp_path / "full.json")
    cpu.write_text(json.dumps({**_stored(_report(0.93), "cpu"), **QUICK}))
    like.write_text(json.dumps({**json.loads(like.read_text()), **QUICK}))
    full.write_text(json.dumps({**json.loads(full.read_text()), "settings": {**NAMED_ROWS, "epochs": 100}}))
    # Act: rendered without --quick or --epochs, as render-only runs nothing
    code = stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(like)])
    # Assert: the like one goes beside; the full one is refused
    assert code == 0 and "GPU s (n)" in (tmp_path / "q.md").read_text()
    with pytest.raises(SystemExit, match="full.json is a run of 100 epochs; this table is a --quick run of 10"):
        stfl.main(["--render-only", "--json", str(cpu), "--gpu-json", str(full)])


@pytest.mark.parametrize("device, why", [
    ({"device": "cuda", "cores": 16, "gpu": "H100"}, "timed on cuda (H100) with 16 cores"),
    ({"device": "cpu", "cores": 16}, "timed on cpu with 16 cores"),
    ({}, "the run's device and core count are not recorded"),
])
def test_time_targets_are_judged_only_on_the_2_cpu_cores_they_are_for(device, why):
    # Arrange: times that would meet both targets, from another host
    report = {**_report(0.93, ckks_seconds=8.0, ckks_mode=None), "device": device}
    # Act
    text = speed_lines(report)
    # Assert
    assert text.count(f"not judged, {why}") == 2 and ": met" not in text


def test_a_row_timed_later_on_another_host_is_not_judged_by_the_datasets_host():
    # Arrange: the dataset ran on the 2 CPU cores; its STFL row was rerun on a GPU host
    report = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    report["datasets"][0]["run"]["device"] = {"device": "cpu", "cores": 2}
    report["datasets"][0]["row_runs"] = {"stfl": {"device": {"device": "cuda", "cores": 16}}}
    # Act / Assert
    assert "(target under 15 s end to end: not judged, timed on cuda with 16 cores" in speed_lines(report)


def test_each_dataset_from_its_own_run_names_its_device_and_gpu():
    # Arrange: two datasets from two runs, one on a GPU
    old = _dataset_run(_report(0.93), "old", ["stfl"])
    old["datasets"][0]["run"]["device"] = {"device": "cpu", "cpu": "EPYC", "cores": 2}
    new = {**_report(0.93), "datasets": [{**_report(0.93)["datasets"][0], "dataset": "give_credit"}]}
    new["datasets"][0]["run"] = {"date": "new", "commit": "new", "command": "cmd new",
                                 "device": {"device": "cuda", "cpu": "Xeon", "cores": 16, "gpu": "H200"}}
    # Act
    text = provenance(merge_reports(old, {**new, "quick": False}))
    # Assert
    assert "commit `old`, on cpu — EPYC, 2 cores, `cmd old`" in text
    assert "commit `new`, on cuda — Xeon, 16 cores, GPU H200, `cmd new`" in text


@pytest.mark.parametrize("datasets", [("give_credit",), ("breast",)], ids=["another dataset", "the same, whole"])
def test_whole_datasets_join_only_a_file_of_their_device(datasets):
    # Arrange: a file whose breast ran on the CPU
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    old["datasets"][0]["run"]["settings"] = {**NAMED_ROWS, "device": "cpu"}
    # Act
    why = check_mergeable(old, datasets, ["stfl", "he-vfl ckks"], seeds=2, epochs=100, device="cuda")
    # Assert: a one-line refusal; the same device may join
    assert why == ("--merge: the stored breast ran on --device cpu; datasets run on --device cuda go in a result"
                   " file of their own")
    assert check_mergeable(old, datasets, ["stfl", "he-vfl ckks"], seeds=2, epochs=100, device="cpu") is None


def test_the_table_says_its_std_is_the_sample_std():
    assert "mean ± sample std over seeds" in to_markdown(_report(0.93), "")


def test_cells_kept_by_resume_are_named_with_when_and_where_they_ran(tmp_path, monkeypatch):
    # Arrange: a run of 2 cells, stopped in its second, on an earlier host
    from benchmarks import checkpoint

    data = SimpleNamespace(active=SimpleNamespace(n_rows=9))
    monkeypatch.setattr(stfl_cells, "methods", lambda cfg: [("centralized", False, None), ("stfl", False, None)])
    monkeypatch.setattr(stfl, "load_datasets", lambda cfg: {"breast": data})
    monkeypatch.setattr(stfl, "seal_rotation_ms", lambda: 1.0)

    def cell(name, data, cfg, seed, index):
        if index == 1 and stop:
            raise KeyboardInterrupt
        return name, stfl_cells.methods(cfg)[index][0], seed, _result(0.9), 1.0

    monkeypatch.setattr(stfl_cells, "run_cell", cell)
    earlier = {"date": "2020-01-01T00:00:00+00:00",
               "host": {"name": "old-box", "cpu": "Old CPU", "cores": 2, "load_average_1m": 3.5}}
    here_and_now, stop = checkpoint.here_and_now, True
    monkeypatch.setattr(checkpoint, "here_and_now", lambda: earlier)
    out = tmp_path / "stfl.json"
    argv = ["--datasets", "breast", "--seeds", "1", "--epochs", "2", "--json", str(out)]
    with pytest.raises(KeyboardInterrupt):
        stfl.main(argv)
    # Act: resumed on this host, now
    monkeypatch.setattr(checkpoint, "here_and_now", here_and_now)
    stop = False
    stfl.main([*argv, "--resume"])
    # Assert: the kept cell with when and where it ran, in the JSON and the Markdown
    assert json.loads(out.read_text())["datasets"][0]["resumed"] == [{"row": "centralized", "seed": 0, **earlier}]
    assert ("- cancer: centralized seed 0 — ended 2020-01-01T00:00:00+00:00 on old-box (Old CPU, 2 cores), load 3.5"
            " as they ended") in (tmp_path / "stfl.md").read_text()


def test_rows_rerun_later_replace_the_kept_cells_of_those_rows():
    # Arrange: a stored dataset with a kept STFL cell; a later run of the STFL row alone
    old = _dataset_run(_report(0.93), "old", ["stfl", "he-vfl ckks"])
    old["datasets"][0]["resumed"] = [{"row": "stfl", "seed": 0}, {"row": "he-vfl ckks", "seed": 1}]
    new = _dataset_run(_report(0.95), "new", ["stfl"])
    # Act
    merged = merge_reports(old, new)
    # Assert: the rerun row's kept cell is gone; the other row's stays
    assert merged["datasets"][0]["resumed"] == [{"row": "he-vfl ckks", "seed": 1}]
    assert summarize(merged["datasets"][0]["runs"])["stfl"]["accuracy_mean"] == pytest.approx(95.0)
