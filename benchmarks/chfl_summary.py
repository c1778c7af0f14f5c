"""Summaries of the CHFL benchmark's runs: each client's learning rate, then Table II, III, Fig. 4 cells.

Kept apart from :mod:`benchmarks.chfl` (which plans and runs jobs) so the report and
``--render-only`` work from stored runs alone.
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Sequence

from benchmarks.stats import sample_std
from securefl.algorithms.chfl import REPORTED as METHODS
from securefl.algorithms.chfl_tuning import choose_lr


def cell(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample std and count of ``values``."""
    return {"mean": statistics.fmean(values), "std": sample_std(values),
            "n": len(values)}


def run_key(job: dict[str, Any]) -> str:
    """The run a job belongs to: the job without its learning rate."""
    return json.dumps({k: v for k, v in job.items() if k != "lr"}, sort_keys=True)


def tune_lr(outputs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One output per run, each client keeping per method the learning rate that its validation rows prefer.

    Outputs whose jobs differ only in ``lr`` are one run. For every method and client the
    output whose selected model has the highest validation accuracy wins (ties: the
    smallest lr); the combined output's accuracy is the mean of the winners' test
    accuracy, and ``selected`` records each client's lr. A run with one lr (or a file
    written before lrs were tuned) passes through unchanged.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for o in outputs:
        groups.setdefault(run_key(o["job"]), []).append(o)
    return [_combine(sorted(g, key=lambda o: o["job"]["lr"])) if len(g) > 1 else g[0] for g in groups.values()]


def _combine(outputs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The per-client lr choice over ``outputs`` (one run at several learning rates, lr ascending)."""
    methods = choose_lr([(o["job"]["lr"], {m: {"clients": o["clients"][m], "selected": o["selected"][m]}
                                           for m in o["accuracy"]}) for o in outputs])
    return {**outputs[0], "job": {**outputs[0]["job"], "lr": [o["job"]["lr"] for o in outputs]},
            "accuracy": {m: v["accuracy"] for m, v in methods.items()},
            "clients": {m: v["clients"] for m, v in methods.items()},
            "selected": {m: v["selected"] for m, v in methods.items()},
            "last_round_accuracy": {m: v["last_round_accuracy"] for m, v in methods.items()},
            "seconds": sum(o["seconds"] for o in outputs)}


def summarize(outputs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table II per dataset, Table III per client count, Fig. 4 per ratio, and the timing comparison."""
    outputs = tune_lr(outputs)

    def group(pred) -> dict[str, dict[str, Any]]:
        chosen = [o for o in outputs if pred(o["job"])]
        return {m: cell([o["accuracy"][m] for o in chosen]) for m in METHODS
                if chosen and all(m in o["accuracy"] for o in chosen)}

    table2 = {d: group(lambda j, d=d: j["experiment"] == "table2" and j["dataset"] == d)
              for d in dict.fromkeys(o["job"]["dataset"] for o in outputs if o["job"]["experiment"] == "table2")}
    sweep = [o for o in outputs if o["job"]["experiment"] in ("table3", "fig4")]
    name = sweep[0]["job"]["dataset"] if sweep else next(iter(table2), None)

    # The sweep's points share its feature splits (a split's common features are nested across
    # ratios and client counts), so the 5-client / 30% point takes Table II's runs of those splits only.
    splits = {o["job"]["feature_seed"] for o in sweep} or None

    def point(n: int, ratio: float) -> dict[str, Any]:
        return group(lambda j: j["dataset"] == name and j["n_clients"] == n and abs(j["ratio"] - ratio) < 1e-9
                     and j["experiment"] != "timing" and (j["experiment"] != "table2" or j["seed"] == 0)
                     and (splits is None or j["feature_seed"] in splits))

    clients = sorted({o["job"]["n_clients"] for o in outputs if o["job"]["experiment"] in ("table2", "table3")
                      and o["job"]["dataset"] == name})
    ratios = sorted({o["job"]["ratio"] for o in outputs if o["job"]["dataset"] == name
                     and o["job"]["experiment"] in ("table2", "fig4")})
    timing = {("secure" if o["job"]["secure"] else "plain"): {
        "round_seconds": statistics.fmean(o["round_seconds"]),
        "aggregation_seconds": statistics.fmean(o["aggregation_seconds"]), "bytes": o["bytes"],
        "rounds": o["job"]["rounds"], "accuracy": o["accuracy"]} for o in outputs if o["job"]["experiment"] == "timing"}
    return {"table2": table2, "sweep_dataset": name, "table3": {str(n): point(n, 0.3) for n in clients},
            "fig4": {f"{r:g}": point(5, r) for r in ratios}, "timing": timing}


__all__ = ["METHODS", "cell", "run_key", "summarize", "tune_lr"]
