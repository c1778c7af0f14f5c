"""benchmarks.common: the --datasets and --device parsing every benchmark shares, and the commit stamp."""

import argparse
import subprocess

import pytest
import torch

from benchmarks import chfl, gl, stfl
from benchmarks.common import dataset_names, device_name, git_commit

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


def _git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def test_rewritten_result_files_do_not_mark_the_commit_dirty_but_code_changes_do(tmp_path):
    # Arrange: a repository with one code file and one result file
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
