"""Finished benchmark cells kept on disk as they end, so that a stopped run can resume.

A benchmark writes its result file only after its last cell, so an interrupted run
leaves no half-written result. Meanwhile each finished cell goes to a checkpoint beside
the result (``<result>.cells.jsonl``): one JSON line a cell, flushed as the cell ends.
A run started with ``--resume`` reads the cells back and runs only the others. A
checkpoint is tied to the settings, commit and device of the run that began it, and
another run's cells are refused, never mixed in. It is removed once the result file
is written. Only JSON is read back.

Each cell's line also says when and on which host the cell ended (``ran``): a resumed
run's kept cells were timed by an earlier process, maybe on another host or under
another load, and the result says so.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from pathlib import Path
from typing import Any

from securefl.results import strict_json


def checkpoint_path(result: Path) -> Path:
    """Where the cells of a run writing ``result`` are kept."""
    return result.with_name(result.stem + ".cells.jsonl")


class CellLog:
    """The checkpoint of one run: ``done`` maps a cell's id (a list of names) to what was stored,
    ``ran`` a kept cell's id to when and where it ran (cells of older checkpoints lack it)."""

    def __init__(self, path: Path, key: dict[str, Any], done: dict[tuple, dict[str, Any]],
                 ran: dict[tuple, dict[str, Any]] | None = None) -> None:
        self.path, self.key, self.done, self.ran = path, key, done, ran or {}

    @classmethod
    def open(cls, path: Path, key: dict[str, Any], *, resume: bool) -> "CellLog":
        """The cells of an earlier run with this ``key`` if ``resume``; else a fresh checkpoint.

        SystemExit (one line) if ``resume`` finds the cells of a run with another key or
        a damaged line other than the last (a run killed mid-write leaves at most that).
        """
        key = json.loads(json.dumps(strict_json(key)))  # as it reads back: tuples become lists
        done, ran = _read(path, key) if resume and path.exists() else ({}, {})
        if not resume and path.exists():
            print(f"{path}: starting afresh (--resume would have kept its cells)", flush=True)
        if not done:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"checkpoint": key}) + "\n")
        return cls(path, key, done, ran)

    def add(self, cell: tuple, stored: dict[str, Any]) -> None:
        """Append one finished cell, with when and where it ended, and flush it to disk."""
        line = json.dumps({"cell": list(cell), "ran": here_and_now(), **strict_json(stored)}, allow_nan=False)
        with open(self.path, "a") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def remove(self) -> None:
        """Delete the checkpoint (its run's result file is written)."""
        self.path.unlink(missing_ok=True)


def here_and_now() -> dict[str, Any]:
    """When (UTC) and on which host a cell ended: the machine's name, CPU, cores and load."""
    from benchmarks.common import cpu_name

    host: dict[str, Any] = {"name": platform.node(), "cpu": cpu_name(), "cores": os.cpu_count()}
    try:
        host["load_average_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    return {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "host": host}


def _read(path: Path, key: dict[str, Any]) -> tuple[dict[tuple, dict[str, Any]], dict[tuple, dict[str, Any]]]:
    """The stored cells, and when and where each ran (:func:`here_and_now`). A last line without
    its newline was cut short when its run was killed: it is cut off the file (once the key
    matches), so the next cell appended starts a line of its own, and that cell reruns."""
    data = path.read_bytes()
    whole = data.rfind(b"\n") + 1
    records = []
    for number, line in enumerate(data[:whole].splitlines(), 1):
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SystemExit(f"--resume: {path} line {number} is not JSON; delete the file to start afresh") \
                from None
    if not records or not isinstance(records[0], dict) or records[0].get("checkpoint") != key:
        raise SystemExit(f"--resume: {path} holds the cells of a run with other settings, commit or device;"
                         " delete it to start afresh")
    for number, r in enumerate(records[1:], 2):
        if not isinstance(r, dict) or not isinstance(r.get("cell"), list):
            raise SystemExit(f"--resume: {path} line {number} is not a cell; delete the file to start afresh")
    if whole < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(whole)
    cells = {tuple(r.pop("cell")): r for r in records[1:]}
    return cells, {cell: r.pop("ran") for cell, r in cells.items() if isinstance(r.get("ran"), dict)}


__all__ = ["CellLog", "checkpoint_path", "here_and_now"]
