"""Benchmark checkpoints: finished cells survive a stopped run and only a like run reuses them."""

from __future__ import annotations

import pytest

from benchmarks.checkpoint import CellLog, checkpoint_path

KEY = {"commit": "abc", "settings": {"datasets": ("breast",), "seeds": 2}}


def test_cells_added_by_one_run_are_done_for_a_resumed_run(tmp_path):
    # Arrange
    path = checkpoint_path(tmp_path / "stfl.json")
    first = CellLog.open(path, KEY, resume=False)
    first.add(("breast", "stfl", 0), {"result": {"metrics": {"accuracy": 0.9}}, "wall": 1.5})
    # Act
    again = CellLog.open(path, KEY, resume=True)
    # Assert
    assert path.name == "stfl.cells.jsonl"
    assert again.done == {("breast", "stfl", 0): {"result": {"metrics": {"accuracy": 0.9}}, "wall": 1.5}}


def test_without_resume_an_old_checkpoint_is_started_afresh(tmp_path, capsys):
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False).add(("breast", "stfl", 0), {"wall": 1.0})

    fresh = CellLog.open(path, KEY, resume=False)

    assert fresh.done == {} and CellLog.open(path, KEY, resume=True).done == {}
    assert "starting afresh" in capsys.readouterr().out


@pytest.mark.parametrize("other", [{**KEY, "commit": "def"},
                                   {**KEY, "settings": {"datasets": ("breast",), "seeds": 3}}])
def test_a_run_with_other_settings_or_commit_refuses_the_cells(tmp_path, other):
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False).add(("breast", "stfl", 0), {"wall": 1.0})

    with pytest.raises(SystemExit, match="other settings, commit or device"):
        CellLog.open(path, other, resume=True)


def test_a_line_cut_short_by_a_kill_is_dropped_and_its_cell_reruns(tmp_path):
    path = tmp_path / "x.cells.jsonl"
    log = CellLog.open(path, KEY, resume=False)
    log.add(("breast", "stfl", 0), {"wall": 1.0})
    with open(path, "a") as fh:
        fh.write('{"cell": ["breast", "stfl", 1], "wa')

    assert list(CellLog.open(path, KEY, resume=True).done) == [("breast", "stfl", 0)]


def test_cells_added_after_a_cut_short_line_survive_the_next_resume(tmp_path):
    # Arrange: a kill mid-write, then a resumed run that finishes two more cells
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False).add(("breast", "stfl", 0), {"wall": 1.0})
    with open(path, "a") as fh:
        fh.write('{"cell": ["breast", "stfl", 1], "wa')
    resumed = CellLog.open(path, KEY, resume=True)
    resumed.add(("breast", "stfl", 1), {"wall": 2.0})
    resumed.add(("breast", "stfl", 2), {"wall": 3.0})
    # Act
    again = CellLog.open(path, KEY, resume=True)
    # Assert: the torn fragment was cut off, not glued to the next cell
    assert again.done == {("breast", "stfl", 0): {"wall": 1.0}, ("breast", "stfl", 1): {"wall": 2.0},
                          ("breast", "stfl", 2): {"wall": 3.0}}


def test_a_damaged_line_before_the_last_is_a_one_line_error(tmp_path):
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False)
    with open(path, "a") as fh:
        fh.write("garbage\n" + '{"cell": ["breast", "stfl", 1], "wall": 2.0}\n')

    with pytest.raises(SystemExit, match="line 2 is not JSON") as stop:
        CellLog.open(path, KEY, resume=True)
    assert "\n" not in str(stop.value.code)


def test_nan_is_stored_as_null_and_removal_deletes_the_file(tmp_path):
    path = tmp_path / "x.cells.jsonl"
    log = CellLog.open(path, KEY, resume=False)
    log.add(("breast", "stfl", 0), {"auroc": float("nan")})

    assert CellLog.open(path, KEY, resume=True).done[("breast", "stfl", 0)] == {"auroc": None}
    log.remove()
    assert not path.exists()


def test_each_kept_cell_says_when_and_on_which_host_it_ran(tmp_path):
    # Arrange: a cell stored by one run
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False).add(("breast", "stfl", 0), {"wall": 1.0})
    # Act
    again = CellLog.open(path, KEY, resume=True)
    # Assert: what was stored is as before; when and where it ran beside it
    ran = again.ran[("breast", "stfl", 0)]
    assert again.done == {("breast", "stfl", 0): {"wall": 1.0}}
    assert ran["date"].endswith("+00:00") and {"name", "cpu", "cores"} <= ran["host"].keys()


def test_cells_of_a_checkpoint_without_when_and_where_are_kept_without_them(tmp_path):
    # Arrange: a line written before cells recorded where they ran
    path = tmp_path / "x.cells.jsonl"
    CellLog.open(path, KEY, resume=False)
    with open(path, "a") as fh:
        fh.write('{"cell": ["breast", "stfl", 0], "wall": 1.0}\n')
    # Act
    again = CellLog.open(path, KEY, resume=True)
    # Assert
    assert again.done == {("breast", "stfl", 0): {"wall": 1.0}} and again.ran == {}
