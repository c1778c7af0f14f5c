"""What ``python -m benchmarks.gl`` keeps from stored result files: ``--merge`` and ``--reuse``.

Every stored file and setting is checked before the first run (:func:`preflight`),
so a wrong path, a file of another benchmark or a settings mismatch on the second
dataset stops the benchmark at once instead of after hours of covertype runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks.common import read_result
from securefl.algorithms.gl import GLConfig

METHODS = {"gl_covertype": ("gl", "fedavg", "local", "centralized"), "gl_heart": ("gl", "fedavg", "local")}
FEDERATE_NOTHING = ("local", "centralized")
FEDERATION_ONLY = ("federate_bn_stats", "final_average")
"""Methods whose runs do not depend on how federated layers are averaged, and the settings that
only say how (``--reuse``)."""


def load_result(path: Path, flag: str) -> dict[str, Any]:
    """A stored GL result file named by ``flag``; SystemExit with one line if it is not one."""
    old = read_result(path, flag, "gl", {"datasets": dict})
    if not all(isinstance(res, dict) and isinstance(res.get("runs"), list) for res in old["datasets"].values()):
        raise SystemExit(f"{flag}: {path} is not a gl result file")
    return old


def check_previous(name: str, previous: dict[str, Any], config: GLConfig, path: Path) -> None:
    """SystemExit unless ``--merge``'s stored ``name`` experiment used ``config``'s settings."""
    stored, asked = previous["settings"], config.settings()
    if stored != asked:
        keys = ", ".join(sorted(k for k in stored.keys() | asked.keys() if stored.get(k) != asked.get(k)))
        raise SystemExit(f"--merge: {name} settings in {path} differ from this run's ({keys}); rerun without --merge")


def complete_seeds(runs: Sequence[dict[str, Any]], name: str) -> set[int]:
    """Seeds for which every method of ``name`` has a run."""
    have: dict[int, set[str]] = {}
    for r in runs:
        have.setdefault(r["seed"], set()).add(r["method"])
    return {s for s, methods in have.items() if methods >= set(METHODS[name])}


@dataclass(frozen=True)
class StoredRuns:
    """The ``--reuse`` file, read once: its path and its datasets (as :func:`upgrade` gives them)."""

    path: Path
    datasets: dict[str, dict[str, Any]]

    @classmethod
    def read(cls, path: Path) -> "StoredRuns":
        """SystemExit with one line if ``path`` is not a GL result file."""
        return cls(Path(path), upgrade(load_result(path, "--reuse")))


def reused_runs(name: str, seeds: Sequence[int], config: GLConfig, stored: StoredRuns
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs of :data:`FEDERATE_NOTHING` methods for ``seeds`` from the ``--reuse`` file and their provenance.

    The file's settings for ``name`` must equal ``config``'s apart from :data:`FEDERATION_ONLY`, which
    those methods never read: e.g. a ``--bn-stats local`` sweep reruns only GL and FedAvg.
    """
    path, source = stored.path, stored.datasets.get(name)
    if source is None:
        raise SystemExit(f"--reuse: {path} has no {name} runs")
    theirs, ours = ({k: v for k, v in s.items() if k not in FEDERATION_ONLY}
                    for s in (source["settings"], config.settings()))
    if theirs != ours:
        raise SystemExit(f"--reuse: {name} settings in {path} differ from this run's beyond "
                         f"{' and '.join(FEDERATION_ONLY)}")
    runs = [{**r, "reused_from": str(path)} for r in source["runs"]
            if r["method"] in FEDERATE_NOTHING and r["seed"] in set(seeds)]
    used = {r["seed"] for r in runs}
    provenance = [{**p, "seeds": sorted(used & set(p["seeds"])), "methods": list(FEDERATE_NOTHING),
                   "reused_from": str(path)} for p in source["runs_from"] if used & set(p["seeds"])]
    return runs, provenance


def upgrade(old: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``old``'s datasets, each with a ``runs_from`` list (files written before ``--merge`` get their header)."""
    header = {k: old.get(k) for k in ("date", "commit", "device", "command")}
    for res in old["datasets"].values():  # written before these settings existed: what was done then
        if isinstance(res.get("settings"), dict):
            res["settings"].setdefault("federate_bn_stats", True)
            res["settings"].setdefault("final_average", True)
            res["settings"].setdefault("select", "last")
    return {name: {**res, "runs_from": res.get("runs_from") or [{**header, "seeds": res["seeds"],
                                                                   "seconds": res.get("seconds")}]}
            for name, res in old["datasets"].items()}


def preflight(plans: dict[str, tuple[GLConfig, Sequence[int]]], previous: dict[str, Any], *,
              json_path: Path, reuse: StoredRuns | None, restart: bool) -> None:
    """Check, for every dataset about to run (``plans``: its config and seeds), what ``--merge``
    keeps and ``--reuse`` takes, as :func:`check_previous` and :func:`reused_runs` will."""
    for name, (config, seeds) in plans.items():
        kept = previous.get(name) if not restart else None
        if kept is not None:
            check_previous(name, kept, config, json_path)
        fresh = set(seeds) - (complete_seeds(kept["runs"], name) if kept is not None else set())
        if reuse is not None and fresh:
            reused_runs(name, sorted(fresh), config, reuse)
