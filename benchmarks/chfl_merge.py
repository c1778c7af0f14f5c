"""Chunked CHFL benchmark runs: keep a result file's runs and add the planned ones it lacks.

The whole benchmark with a learning-rate grid takes hours on two cores, longer
than one sitting. ``--merge`` reads the ``--json`` file, checks that its runs were
made with the same settings (every stored one but the plan's size, :data:`PLAN_SETTINGS`),
and leaves only the missing jobs to run; ``--max-runs N`` stops after N runs (a run:
one job at every learning rate, so a chunk never splits a client's lr choice; the
secure and plain timing jobs are one run, so their times come from one chunk).
Each invocation is listed under ``chunks`` with its date, commit, load and time.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from benchmarks.chfl_summary import run_key
from benchmarks.common import read_result

# the settings that only size the plan (or run it): a file to extend may differ in these, and in no other
PLAN_SETTINGS = ("datasets", "splits", "runs", "sweep_splits", "clients", "ratios", "workers", "render_only")


def job_key(job: dict[str, Any]) -> str:
    """A job's identity in a result file (tuples and lists compare equal)."""
    return json.dumps(job, sort_keys=True)


def _result_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """A file's settings but :data:`PLAN_SETTINGS`, as JSON stores them; one written before the lr grid
    had a single ``lr``."""
    lrs = settings.get("lrs") or [settings.get("lr", 1e-3)]
    kept = {k: v for k, v in settings.items() if k not in (*PLAN_SETTINGS, "lr")}
    return json.loads(json.dumps({**kept, "lrs": lrs}))


def load_previous(path: Path, settings: dict[str, Any], planned: Sequence[Any]) -> dict[str, Any]:
    """The result file to extend, or SystemExit with one line saying why it cannot be."""
    old = read_result(path, "--merge", "chfl", {"runs": list, "settings": dict})
    ours, theirs = _result_settings(settings), _result_settings(old["settings"])
    runs = old["runs"] = stored_runs(old, "--merge")
    differ = sorted(k for k in {**ours, **theirs} if ours.get(k) != theirs.get(k))
    if differ:
        raise SystemExit(f"--merge: {path} was run with other {', '.join(differ)}; rerun without --merge")
    keys = {job_key(asdict(j)) for j in planned}
    outside = [r for r in runs if job_key(r["job"]) not in keys]
    if outside:
        raise SystemExit(f"--merge: {path} holds {len(outside)} runs this plan does not include (first:"
                         f" {outside[0]['job']}); plan at least what it holds or rerun without --merge")
    return old


def stored_runs(old: dict[str, Any], flag: str) -> list[dict[str, Any]]:
    """A chfl result's runs, each job with its ``lr``: a file from before the lr grid ran every
    job at its one rate and wrote jobs without it. SystemExit naming ``flag`` if a run is not a
    chfl run (anything but a dict with a ``job`` dict)."""
    if not all(isinstance(r, dict) and isinstance(r.get("job"), dict) for r in old["runs"]):
        raise SystemExit(f"{flag}: the file's runs are not chfl runs")
    lrs = _result_settings(old["settings"])["lrs"]
    return [{**r, "job": {"lr": lrs[0], **r["job"]}} for r in old["runs"]] if len(lrs) == 1 else old["runs"]


def chunk_record(report: dict[str, Any], jobs: int, seconds: float) -> dict[str, Any]:
    """What one invocation ran: when, at which commit, under which load, how many jobs, how long."""
    return {"date": report["date"], "commit": report["commit"], "command": report.get("command"),
            "load_average_1m": report["device"].get("load_average_1m"), "jobs": jobs, "seconds": seconds}


def previous_chunks(old: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks of a stored file; a file written in one go is one chunk, read from its header."""
    return old.get("chunks") or [chunk_record(old, len(old["runs"]), old.get("seconds", 0.0))]


def _chunk_key(job: Any) -> str:
    """The run ``--max-runs`` counts ``job`` in: its lrs together, and the secure and plain timing jobs
    together (every other job is secure)."""
    return run_key({k: v for k, v in asdict(job).items() if k != "secure"})


def todo(planned: Sequence[Any], done: Sequence[dict[str, Any]], max_runs: int | None) -> list[Any]:
    """The planned jobs not in ``done``, cut after ``max_runs`` whole runs (all lrs of a run together,
    and both timing jobs together)."""
    have = {job_key(r["job"]) for r in done}
    missing = [j for j in planned if job_key(asdict(j)) not in have]
    if max_runs is None:
        return missing
    runs = set(list(dict.fromkeys(_chunk_key(j) for j in missing))[:max_runs])
    return [j for j in missing if _chunk_key(j) in runs]


__all__ = ["PLAN_SETTINGS", "chunk_record", "job_key", "load_previous", "previous_chunks", "todo"]
