"""benchmarks.common: the --datasets parsing every benchmark shares."""

import argparse
import subprocess

import pytest

from benchmarks.common import dataset_names, git_commit

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
