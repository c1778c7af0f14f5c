"""benchmarks.common: the --datasets and --device parsing every benchmark shares and the commit stamp
(pool workers that end with their benchmark: tests/protocols/test_lifecycle.py)."""

import argparse
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from benchmarks import chfl, chfl_reference, gl, stfl
from benchmarks.common import (config_report, count_option, dataset_names, device_name, git_commit, read_result,
                               writable, write_json)

KNOWN = ("breast", "default_credit", "give_credit")


def test_dataset_names_splits_and_strips_the_list():
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act
    names = dataset_names(parser, " breast, give_credit ,", KNOWN)
    # Assert
    assert names == ("breast", "give_credit")


@pytest.mark.parametrize(("value", "message"), [
    ("breast,mnist", "unknown dataset 'mnist'; choose from breast, default_credit, give_credit"),
    (" , ", "--datasets names no dataset"),
])
def test_a_bad_dataset_list_is_a_one_line_usage_error(capsys, value, message):
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act
    with pytest.raises(SystemExit) as exit_info:
        dataset_names(parser, value, KNOWN)
    # Assert
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"bench: error: {message}"


@pytest.mark.parametrize("start", [stfl.parse_args, chfl.parse_args], ids=["stfl", "chfl"])
def test_a_count_past_what_any_run_takes_is_a_usage_error_not_an_overflow(capsys, start):
    # Act
    with pytest.raises(SystemExit) as exit_info:
        start(["--quick", "--workers", "99999999999999999999"])
    # Assert
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "error: argument --workers: must be at most 2147483647, got 99999999999999999999")


def test_count_option_reads_ints_and_names_what_is_not_one():
    assert count_option("7") == 7 and count_option("-1") == -1  # each script checks its own lower bound
    with pytest.raises(argparse.ArgumentTypeError, match="invalid int value: '2.5'"):
        count_option("2.5")


def test_device_name_accepts_cpu():
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act / Assert
    assert device_name(parser, "cpu") == "cpu"


@pytest.mark.parametrize(("value", "message"), [
    ("tpu:0", "--device 'tpu:0' is not a torch device"),
    ("mps", "--device 'mps': only cpu and cuda are supported"),
])
def test_a_device_torch_cannot_use_is_a_one_line_usage_error(capsys, value, message):
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act
    with pytest.raises(SystemExit) as exit_info:
        device_name(parser, value)
    # Assert
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"bench: error: {message}")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA, so --device cuda is valid here")
@pytest.mark.parametrize("start", [
    lambda argv: stfl.parse_args(argv),
    lambda argv: chfl.parse_args(argv),
    lambda argv: gl.main([*argv, "--json", "unused.json"]),
], ids=["stfl", "chfl", "gl"])
def test_benchmarks_refuse_cuda_without_cuda_before_any_work(capsys, start):
    # Act
    with pytest.raises(SystemExit) as exit_info:
        start(["--quick", "--device", "cuda"])
    # Assert: the usage error, not the traceback torch raises when asked for a GPU's name
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "error: --device cuda: CUDA is not available on this machine; use --device cpu")


@pytest.mark.parametrize("module", [stfl, chfl], ids=["stfl", "chfl"])
def test_a_quick_run_without_json_never_lands_on_the_full_results(module, tmp_path):
    # Act
    quick, full = module.parse_args(["--quick"]), module.parse_args([])
    named = module.parse_args(["--quick", "--json", str(tmp_path / "q.json")])
    # Assert
    name = module.__name__.rsplit(".", 1)[-1]
    assert (quick.json_path.name, full.json_path.name) == (f"{name}.quick.json", f"{name}.json")
    assert quick.markdown_path.name == f"{name}.quick.md" and named.json_path == tmp_path / "q.json"


@pytest.mark.parametrize(("content", "message"), [
    (None, "--merge: .* does not exist"),
    ("[1,", "--merge: .* is not a readable result file"),
    ('{"benchmark": "gl", "datasets": []}', "--merge: .* is not a stfl result file"),
    ('{"benchmark": "stfl", "datasets": {}}', "--merge: .* is not a stfl result file"),
])
def test_read_result_refuses_what_is_not_this_benchmarks_file(tmp_path, content, message):
    # Arrange
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    # Act / Assert
    with pytest.raises(SystemExit, match=message):
        read_result(path, "--merge", "stfl", {"datasets": list})


def test_read_result_accepts_its_own_and_older_unnamed_files(tmp_path):
    # Arrange: a current file and one written before benchmarks recorded their name
    named, unnamed = tmp_path / "a.json", tmp_path / "b.json"
    named.write_text('{"benchmark": "stfl", "datasets": [1]}')
    unnamed.write_text('{"datasets": []}')
    # Act / Assert
    assert read_result(named, "--merge", "stfl", {"datasets": list})["datasets"] == [1]
    assert read_result(unnamed, "--merge", "stfl", {"datasets": list}) == {"datasets": []}


def test_result_files_are_strict_json_with_null_for_nan(tmp_path):
    # Arrange: a 95% CI over one seed is nan, an unbounded ratio inf
    result = {"ci95": float("nan"), "runs": [{"auroc": float("inf")}, {"auroc": 0.5}]}
    # Act
    path = write_json(tmp_path / "r.json", result)
    # Assert: a strict parser (no NaN, as jq or JavaScript) reads it
    text = path.read_text()
    strict = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert strict == {"ci95": None, "runs": [{"auroc": None}, {"auroc": 0.5}]}


@pytest.mark.parametrize("module", [stfl, chfl], ids=["stfl", "chfl"])
def test_render_only_of_another_benchmarks_file_is_one_line_and_writes_nothing(module, tmp_path):
    # Arrange: a gl-shaped file
    path = tmp_path / "other.json"
    path.write_text('{"benchmark": "gl", "datasets": {}}')
    # Act / Assert
    with pytest.raises(SystemExit, match="--render-only: .* is not a (stfl|chfl) result file"):
        module.main(["--render-only", "--json", str(path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json"]


@pytest.mark.parametrize("start", [
    lambda argv: stfl.parse_args(argv),
    lambda argv: chfl.parse_args(argv),
    lambda argv: gl.main(argv),
], ids=["stfl", "chfl", "gl"])
def test_benchmarks_refuse_a_result_path_they_cannot_write_before_any_work(capsys, tmp_path, start):
    # Arrange: the Markdown would go where a folder already is
    (tmp_path / "r.md").mkdir()
    # Act
    with pytest.raises(SystemExit) as exit_info:
        start(["--quick", "--json", str(tmp_path / "r.json")])
    # Assert
    assert exit_info.value.code == 2
    assert "error: --markdown" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


def _git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def test_rewritten_result_files_do_not_mark_the_commit_dirty_but_code_changes_do(tmp_path, monkeypatch):
    # Arrange: a repository with one code file and one result file; git must find this one, not a
    # GIT_DIR the environment names (as on a GPU machine, where the copied tree has no .git)
    monkeypatch.delenv("GIT_DIR", raising=False)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    code, result = tmp_path / "benchmarks" / "run.py", tmp_path / "benchmarks" / "results" / "r.json"
    code.write_text("x = 1\n")
    result.write_text("{}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    # Act
    result.write_text('{"runs": 1}\n')
    after_result = git_commit(tmp_path)
    code.write_text("x = 2\n")
    after_code = git_commit(tmp_path)
    # Assert
    assert len(after_result) == 40 and "+dirty" not in after_result
    assert after_code == after_result + "+dirty"


def test_two_different_uncommitted_edits_are_told_apart(tmp_path, monkeypatch):
    # Arrange: as above; --resume keys its checkpoint on this, where "+dirty" alone matched both edits
    from benchmarks.common import uncommitted_code

    monkeypatch.delenv("GIT_DIR", raising=False)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    code = tmp_path / "benchmarks" / "run.py"
    code.write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    # Act
    clean = uncommitted_code(tmp_path)
    code.write_text("x = 2\n")
    first = uncommitted_code(tmp_path)
    code.write_text("x = 3\n")
    second = uncommitted_code(tmp_path)
    code.write_text("x = 1\n")
    (tmp_path / "benchmarks" / "new.py").write_text("y = 1\n")  # untracked code a run may import
    untracked = uncommitted_code(tmp_path)
    (tmp_path / "benchmarks" / "results" / "r.json").write_text("{}\n")  # results never count
    # Assert
    assert clean == "" and len({first, second, untracked}) == 3 and "" not in {first, second, untracked}
    assert uncommitted_code(tmp_path) == untracked


def test_a_tree_without_git_takes_the_named_commit_and_says_git_did_not_confirm_it(tmp_path, monkeypatch):
    # Arrange: a copied tree with no .git, as a lent GPU machine receives it
    monkeypatch.setenv("SECUREFL_COMMIT", "abc123")
    # Act
    named = git_commit(tmp_path)
    monkeypatch.delenv("SECUREFL_COMMIT")
    # Assert
    assert named == "abc123 (named by SECUREFL_COMMIT; no git checkout)"
    assert git_commit(tmp_path) == "unknown"


def test_a_named_commit_that_git_does_not_confirm_is_kept_beside_what_git_says(monkeypatch):
    # Arrange: this checkout, and a commit named for it that is not its HEAD
    found = git_commit()
    monkeypatch.setenv("SECUREFL_COMMIT", "abc123")
    # Act
    named = git_commit()
    # Assert: both are in the record; a named commit that matches changes nothing
    assert named == f"abc123 (named by SECUREFL_COMMIT; the checkout's git says {found})"
    monkeypatch.setenv("SECUREFL_COMMIT", found)
    assert git_commit() == found


@dataclass(frozen=True)
class _CpuOnlyConfig:
    quick: bool
    sizes: tuple[int, ...]
    json_path: Path


def test_config_report_records_settings_without_paths_and_a_cpu_for_a_config_without_device():
    # Arrange: a benchmark whose config names no device (PSI runs on the CPU only)
    cfg = _CpuOnlyConfig(quick=True, sizes=(10, 20), json_path=Path("out.json"))
    # Act
    report = config_report("psi", cfg, ["--quick"], paths=("json_path",), extra={"pool": "shared"})
    # Assert
    assert report["settings"] == {"quick": True, "sizes": (10, 20), "pool": "shared"}
    assert report["device"]["device"] == "cpu" and report["benchmark"] == "psi"
    assert report["command"] == "python -m benchmarks.psi --quick"


def test_config_report_takes_the_device_a_config_names(monkeypatch):
    # Arrange
    @dataclass(frozen=True)
    class WithDevice:
        quick: bool
        device: str

    seen = []
    monkeypatch.setattr("benchmarks.common.device_info", lambda name: seen.append(name) or {"type": name})
    # Act
    report = config_report("stfl", WithDevice(quick=False, device="cuda"), [])
    # Assert
    assert seen == ["cuda"] and report["device"] == {"type": "cuda"}


@pytest.mark.parametrize("json_name, markdown_name", [("r.md", None), ("r.json", "r.json"), ("r.json", "./r.json")])
def test_writable_refuses_a_markdown_path_that_is_the_json_path(tmp_path, capsys, json_name, markdown_name):
    # before, `--json r.md` wrote the JSON, then the Markdown over it, and exited 0
    parser = argparse.ArgumentParser(prog="bench")
    markdown = None if markdown_name is None else tmp_path / markdown_name
    with pytest.raises(SystemExit) as stop:
        writable(parser, json=tmp_path / json_name, markdown=markdown)
    assert stop.value.code == 2
    assert "would replace --json" in capsys.readouterr().err
    writable(parser, json=tmp_path / "r.json", markdown=None)  # the default beside it is fine


@pytest.mark.parametrize("json_name, markdown_name, read, flag", [
    ("g.json", None, "g.json", "--json"), ("r.json", "g.json", "g.json", "--markdown"),
    ("r.json", None, "r.md", "--markdown (default: the --json path with .md)"),
])
def test_writable_refuses_an_output_that_is_one_of_the_runs_inputs(tmp_path, capsys, json_name, markdown_name, read,
                                                                   flag):
    # Arrange: before, `--gpu-json g.json --json g.json` replaced the GPU run it read, and exited 0
    parser = argparse.ArgumentParser(prog="bench")
    markdown = None if markdown_name is None else tmp_path / markdown_name
    # Act
    with pytest.raises(SystemExit) as stop:
        writable(parser, json=tmp_path / json_name, markdown=markdown, inputs={"gpu_json": tmp_path / read})
    # Assert: one line naming the output's flag and the input's
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and f"error: {flag} {tmp_path / read} would replace --gpu-json" in err
    writable(parser, json=tmp_path / "r.json", markdown=None, inputs={"gpu_json": tmp_path / "g.json"})


@pytest.mark.parametrize("start, flag", [
    (lambda argv, path: stfl.parse_args([*argv, "--gpu-json", str(path)]), "--gpu-json"),
    (lambda argv, path: chfl_reference.parse_args([*argv, "--compare", str(path)]), "--compare"),
], ids=["stfl", "chfl_reference"])
def test_a_benchmark_refuses_to_write_over_the_result_file_it_reads(capsys, tmp_path, start, flag):
    # Arrange: a stored result the run reads
    path = tmp_path / "read.json"
    path.write_text('{"datasets": []}')
    # Act
    with pytest.raises(SystemExit) as stop:
        start(["--quick", "--json", str(path)], path)
    # Assert: refused before any work, the file as it was
    assert stop.value.code == 2 and f"would replace {flag}" in capsys.readouterr().err
    assert path.read_text() == '{"datasets": []}'


def test_chfl_refuses_a_json_where_its_figure_goes(capsys, tmp_path):
    # Arrange: Fig. 4 is written beside the Markdown, which defaults to the --json path with .md
    from benchmarks import chfl

    path = tmp_path / "c.png"
    # Act
    with pytest.raises(SystemExit) as stop:
        chfl.parse_args(["--quick", "--json", str(path)])
    # Assert
    assert stop.value.code == 2 and f"the PNG beside --markdown {path} would replace --json {path}" in \
        capsys.readouterr().err
