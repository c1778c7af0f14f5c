"""Each CHFL client chooses its own learning rate on its own validation rows.

The paper (section V-A): "each client tunes hyperparameters such as learning rate
and mu of CHFL using their own validation dataset". A run already picks, per
client, the round (and mu) whose model scores best on that client's validation
rows (:func:`securefl.algorithms.chfl.summarize`); tuning the learning rate wraps
whole runs: one run per rate on the same partition and seed, then every client
keeps, per method, the rate whose chosen model its validation rows prefer. Only
validation accuracy decides, never test accuracy, and each client decides alone:
no message carries a score, so the choice leaks nothing beyond the runs themselves.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from protocols.checks import finite_number
from protocols.errors import InputError
from securefl.algorithms.chfl import CHFLConfig, run_chfl_method
from securefl.data.chfl_partition import CHFLPartition

Summary = Mapping[str, Mapping[str, Any]]
"""One run's per-method summary, as :func:`securefl.algorithms.chfl.summarize` returns it."""


def check_lrs(lrs: Sequence[float]) -> tuple[float, ...]:
    """``lrs`` as an ascending tuple of distinct positive finite rates; InputError naming ``lrs`` otherwise."""
    values = tuple(lrs)
    if (not values or len(set(values)) != len(values)
            or any(not finite_number(v) or v <= 0 for v in values)):
        raise InputError(f"lrs must list distinct positive learning rates, got {list(values)!r}")
    return tuple(sorted(float(v) for v in values))


def choose_lr(by_lr: Sequence[tuple[float, Summary]]) -> dict[str, dict[str, Any]]:
    """Per method and client, the run whose selected model scores best on the client's validation rows.

    ``by_lr`` pairs each learning rate with its run's summary. Ties go to the smallest
    rate. The result has the summary's shape: ``clients`` holds the chosen models' test
    accuracy, ``accuracy`` their mean (``accuracy_std_clients`` their std) and every
    ``selected`` entry gains the client's ``lr``. Methods missing from any run are left out.
    """
    runs = sorted(by_lr, key=lambda pair: pair[0])
    if not runs:
        raise InputError("choose_lr needs at least one run")
    methods = [m for m in runs[0][1] if all(m in summary for _, summary in runs)]
    out: dict[str, dict[str, Any]] = {}
    for method in methods:
        chosen = {}
        for client in runs[0][1][method]["selected"]:
            lr, summary = max(runs, key=lambda pair: (pair[1][method]["selected"][client]["val"], -pair[0]))
            chosen[client] = {**summary[method]["selected"][client], "lr": lr,
                              "test": summary[method]["clients"][client]}
        test = [s["test"] for s in chosen.values()]
        out[method] = {"accuracy": statistics.fmean(test), "accuracy_std_clients": statistics.pstdev(test),
                       "last_round_accuracy": statistics.fmean(s["last_round_test"] for s in chosen.values()),
                       "clients": {c: s["test"] for c, s in chosen.items()},
                       "selected": {c: {k: v for k, v in s.items() if k != "test"} for c, s in chosen.items()}}
    return out


def run_chfl_tuned(method: str, partition: CHFLPartition, config: CHFLConfig, *, lrs: Sequence[float],
                   secure_agg: bool = True, backend: str = "inprocess",
                   progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run ``method`` once per rate of ``lrs``; each client keeps the rate its validation rows prefer.

    The DESIGN result dict: ``metrics`` and ``methods`` hold the per-client choice,
    ``chosen_lr`` each client's rate for ``method``, ``seconds`` and ``bytes`` add up
    every run, ``runs`` keeps each rate's own result (without its per-client reports)
    and ``settings.lr`` lists the grid.
    """
    rates = check_lrs(lrs)
    progress = progress if progress is not None else config.progress
    results = []
    for i, lr in enumerate(rates):
        step = None if progress is None else _offset(progress, i * config.rounds, len(rates) * config.rounds)
        results.append(run_chfl_method(method, partition, replace(config, lr=lr, progress=step),
                                       secure_agg=secure_agg, backend=backend))
    methods = choose_lr([(lr, r["methods"]) for lr, r in zip(rates, results)])
    picked = methods[method]
    first = results[0]
    return {
        "method": method, "dataset": first["dataset"], "seed": first["seed"], "device": first["device"],
        "metrics": {"accuracy": picked["accuracy"], "clients": picked["clients"],
                    "methods": {m: v["accuracy"] for m, v in methods.items()}},
        "chosen_lr": {c: s["lr"] for c, s in picked["selected"].items()},
        "seconds": sum(r["seconds"] for r in results), "bytes": sum(r["bytes"] for r in results),
        "methods": methods, "round_seconds": [s for r in results for s in r.get("round_seconds", [])],
        "settings": {**first["settings"], "lr": list(rates),
                     "lr_selection": "per client and method on its own validation rows (ties: smaller lr)"},
        "runs": [{"lr": lr, **{k: v for k, v in r.items() if k not in ("clients", "logs")}}
                 for lr, r in zip(rates, results)],
    }


def _offset(progress: Callable[[int, int], None], done: int, total: int) -> Callable[[int, int], None]:
    """A progress hook for one run of several: its rounds count on after ``done`` of ``total``."""
    return lambda t, _rounds: progress(done + t, total)


__all__ = ["check_lrs", "choose_lr", "run_chfl_tuned"]
