"""securefl.results: result files are written whole, and their place is checked before a run."""

import json

import pytest

from protocols.errors import InputError
from securefl.cli import main
from securefl.results import check_output, write_json_atomically


def test_a_new_file_in_folders_still_to_be_made_is_fine_and_gets_written(tmp_path):
    # Arrange
    target = tmp_path / "new" / "deeper" / "r.json"
    # Act
    check_output(target, "--json")
    write_json_atomically(target, {"a": 1})
    # Assert
    assert json.loads(target.read_text()) == {"a": 1}


@pytest.mark.parametrize(("make", "folder", "message"), [
    (lambda p: p.mkdir(), False, "names a folder, expected a file"),
    (lambda p: p.write_text("x"), True, "exists and is not a folder"),
])
def test_a_file_where_a_folder_is_wanted_or_the_reverse_is_refused(tmp_path, make, folder, message):
    # Arrange
    target = tmp_path / "target"
    make(target)
    # Act / Assert
    with pytest.raises(InputError, match=message):
        check_output(target, "--out" if folder else "--json", folder=folder)


def test_a_parent_that_is_a_file_is_refused_by_name(tmp_path):
    # Arrange
    (tmp_path / "data.csv").write_text("id\n1\n")
    # Act / Assert
    with pytest.raises(InputError, match=r"--json .*data\.csv/sub/r\.json: .*data\.csv is not a folder"):
        check_output(tmp_path / "data.csv" / "sub" / "r.json", "--json")


@pytest.mark.parametrize("argv", [
    ["run", "stfl", "--epochs", "1", "--no-progress"],
    ["demo", "--epochs", "0"],
])
def test_commands_refuse_an_unwritable_json_before_running(tmp_path, capsys, argv):
    # Arrange: --json names an existing folder
    # Act
    code = main([*argv, "--json", str(tmp_path)])
    # Assert: the error line only; no result line was printed, so nothing ran
    captured = capsys.readouterr()
    assert code == 2 and "--json" in captured.err and "names a folder" in captured.err
    assert captured.out == ""


def test_psi_refuses_json_inside_its_out_folder_name_before_running(tmp_path, capsys):
    # Arrange
    left, right = tmp_path / "l.csv", tmp_path / "r.csv"
    left.write_text("id\na\nb\n")
    right.write_text("id\nb\nc\n")
    out = tmp_path / "aligned"
    # Act
    code = main(["psi", str(left), str(right), "--id-column", "id", "--out", str(out), "--json", str(out)])
    # Assert
    assert code == 2 and "is the --out folder" in capsys.readouterr().err and not out.exists()


def test_result_files_are_strict_json_with_null_for_nan_and_inf(tmp_path):
    # Arrange: e.g. a client whose test rows hold one class has no AUROC
    import numpy as np

    result = {"metrics": {"auroc": float("nan"), "clients": [{"auprc": np.float64("inf")}, {"auprc": 0.5}]},
              "seconds": 1.25, "bytes": 3}
    target = tmp_path / "r.json"
    # Act
    write_json_atomically(target, result)
    # Assert: a strict parser reads it; the finite values are unchanged
    text = target.read_text()
    loaded = json.loads(text, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    assert loaded["metrics"] == {"auroc": None, "clients": [{"auprc": None}, {"auprc": 0.5}]}
    assert loaded["seconds"] == 1.25 and loaded["bytes"] == 3


def test_a_folder_that_refuses_files_is_found_before_running(tmp_path, monkeypatch):
    # Arrange: creating any file in the folder fails, as in /proc or on a read-only mount
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Read-only file system")
    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    # Act / Assert
    with pytest.raises(InputError, match=r"--json .*r\.json: cannot write in .* \(Read-only file system\)"):
        check_output(tmp_path / "r.json", "--json")


def test_a_failed_write_names_the_result_file_and_leaves_nothing(tmp_path, monkeypatch):
    # Arrange: the final rename fails
    import os

    def refuse(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", refuse)
    # Act / Assert
    with pytest.raises(InputError, match=r"r\.json: cannot write the result: No space left on device"):
        write_json_atomically(tmp_path / "r.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    # Arrange: Ctrl-C (or SIGTERM, which the CLI raises the same way) during the rename
    import os

    (tmp_path / "r.json").write_text('{"old": 1}\n')

    def interrupt(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupt)
    # Act / Assert
    with pytest.raises(KeyboardInterrupt):
        write_json_atomically(tmp_path / "r.json", {"a": 1})
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"] and (tmp_path / "r.json").read_text() == '{"old": 1}\n'


def test_a_symlinked_result_is_written_to_the_file_it_names(tmp_path):
    # Arrange
    target, link = tmp_path / "kept" / "r.json", tmp_path / "link.json"
    target.parent.mkdir()
    target.write_text("{}\n")
    link.symlink_to(target)
    # Act
    check_output(link, "--json")
    write_json_atomically(link, {"a": 1})
    # Assert: the link is still a link, and its target has the result
    assert link.is_symlink() and json.loads(target.read_text()) == {"a": 1}


def test_a_device_is_refused_before_running_not_replaced(tmp_path):
    # Arrange: /dev/null as root would be swapped for a regular file by an atomic replace
    import os

    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null here")
    link = tmp_path / "null.json"
    link.symlink_to("/dev/null")
    # Act / Assert
    with pytest.raises(InputError, match=r"--json .*null\.json: not a regular file"):
        check_output(link, "--json")
    with pytest.raises(InputError, match="not a regular file"):
        write_json_atomically("/dev/null", {"a": 1})
    assert link.is_symlink() and os.path.realpath(link) == "/dev/null"
