"""Merging STFL benchmark result files: whole datasets, or some rows of a dataset.

``--merge`` adds the datasets run now to a stored file. A run of only some Table I
rows (``--rows``) of a dataset the file holds replaces just those rows: the rest of
that dataset keeps its own run, and each replaced row names the run that produced it
(``row_runs``). So one row can be rerun without rerunning hours of HE-VFL, and the
Markdown still says where every number came from.

Files written before Table I had two STFL rows called their one STFL row "stfl"
whatever it sent; :func:`name_stfl_rows` gives such a row its name today.
"""

from __future__ import annotations

from typing import Any, Callable

STFL_ROWS = {"stfl": "sample", "stfl (means)": "mean"}
"""Table I's STFL rows and what each passive party sends for a row: one posterior draw (the
paper's "latent vector z", the default) or the posterior mean."""
NAMED = "stfl: draws, stfl (means): means"
"""Marks a dataset whose STFL rows are named as in :data:`STFL_ROWS`."""
META = ("date", "commit", "quick", "device", "settings", "command")


def name_stfl_rows(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with an older file's "stfl" row renamed "stfl (means)" where its run sent
    posterior means (every run before ``--latent``, and ``--latent mean`` runs). In place."""
    for d in report.get("datasets", []):
        if d.get("stfl_rows") == NAMED:
            continue
        reading = (d.get("run", report).get("settings") or {}).get("latent", "mean")
        if reading == "mean":
            for table in ("runs", "summary"):
                if "stfl" in d.get(table, {}):
                    d[table] = {("stfl (means)" if row == "stfl" else row): v for row, v in d[table].items()}
        d["stfl_rows"] = NAMED
    return report


def merge_reports(old: dict[str, Any], new: dict[str, Any],
                  summarize: Callable[[dict[str, list[dict]]], dict[str, Any]], order: list[str]
                  ) -> dict[str, Any]:
    """``new`` with ``old``'s datasets and rows it did not rerun, datasets in ``order``.

    A dataset from ``old`` keeps the metadata of the run that produced it (its ``run``
    entry, or ``old``'s header for files written before ``--merge``). A dataset of which
    ``new`` ran only some rows keeps ``old``'s other rows; the rerun rows are listed in
    ``row_runs`` with the new run, and the summary is made anew from the merged runs.
    """
    if old.get("quick") != new.get("quick"):
        raise ValueError("--merge: cannot mix a --quick result with a full one")
    old_meta = {k: old.get(k) for k in META}
    stored = {d["dataset"]: {**d, "run": d.get("run", old_meta)} for d in old["datasets"]}
    for d in new["datasets"]:
        before = stored.get(d["dataset"])
        stored[d["dataset"]] = d if before is None or set(before["runs"]) <= set(d["runs"]) else _rows_into(
            before, d, summarize)
    merged = dict(new)
    merged["datasets"] = sorted(stored.values(), key=lambda d: order.index(d["dataset"]))
    return merged


def _rows_into(before: dict[str, Any], rerun: dict[str, Any],
               summarize: Callable[[dict[str, list[dict]]], dict[str, Any]]) -> dict[str, Any]:
    """``before`` with the rows of ``rerun`` replacing its rows of the same name (and their cells kept
    from a stopped run, ``resumed``, by the rerun's)."""
    runs = {**before["runs"], **rerun["runs"]}
    row_runs = {**before.get("row_runs", {}), **{row: rerun["run"] for row in rerun["runs"]}}
    kept = [c for c in before.get("resumed", []) if c.get("row") not in rerun["runs"]] + rerun.get("resumed", [])
    merged = {k: v for k, v in before.items() if k != "resumed"}
    return {**merged, "runs": runs, "summary": summarize(runs), "row_runs": row_runs,
            **({"resumed": kept} if kept else {})}


def check_mergeable(old: dict[str, Any], datasets: tuple[str, ...], rows: list[str], seeds: int,
                    epochs: int, device: str = "cpu") -> str | None:
    """Why rows run now cannot join a stored dataset that keeps other rows (None: they can):
    Table I's cells of one dataset must share seeds and epochs, and Table III's times a device
    (a CUDA row would meet the 2-core CPU target for the CPU table). Whole datasets, too, join
    only a file of their device: one file's Table III times one device."""
    for d in old.get("datasets", []):
        if d["dataset"] not in datasets or set(d.get("runs", {})) <= set(rows):
            theirs = run_device(d.get("run", old), device)
            if theirs != device:
                return (f"--merge: the stored {d['dataset']} ran on --device {theirs}; datasets run on"
                        f" --device {device} go in a result file of their own")
            continue
        have = {len(results) for results in d["runs"].values()}
        settings = d.get("run", old).get("settings") or {}
        ran = settings.get("epochs", epochs)
        if have != {seeds} or ran != epochs:
            return (f"--merge: {d['dataset']} keeps rows run with {sorted(have)} seeds and {ran} epochs; rows"
                    f" joining them need the same (--seeds {min(have)} --epochs {ran})")
        if run_device(d.get("run", old), device) != device:
            return (f"--merge: {d['dataset']} keeps rows run on --device {run_device(d.get('run', old), device)};"
                    f" rows run on {device} go in a result file of their own")
    return None


def run_device(run: dict[str, Any], default: str) -> str:
    """The ``--device`` a stored run used: its settings', else its device record's; ``default`` if neither."""
    recorded = run.get("device")
    named = recorded.get("device") if isinstance(recorded, dict) else None
    return str((run.get("settings") or {}).get("device") or named or default)


__all__ = ["NAMED", "STFL_ROWS", "check_mergeable", "merge_reports", "name_stfl_rows", "run_device"]
