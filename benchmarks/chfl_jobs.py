"""The CHFL benchmark's jobs: what :mod:`benchmarks.chfl` plans (one federated run each) and how
they run, on a pool of worker processes, with the secure/plain timing pair alone after it.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

from benchmarks.pool import map_jobs
from securefl.runtime.preload import preload

if TYPE_CHECKING:
    from benchmarks.chfl import Config


@dataclass(frozen=True)
class Job:
    """One federated run."""

    experiment: str
    dataset: str
    n_clients: int
    ratio: float
    feature_seed: int
    seed: int
    heads: tuple[str, ...]
    rounds: int
    secure: bool = True
    lr: float = 1e-3


def plan(cfg: Config, names: Sequence[str]) -> list[Job]:
    """Every run of Table II, Table III and Fig. 4. The 5-client, 30% point shares Table II's first
    run of each feature split; when Table II has fewer splits than the sweep, the rest are planned."""
    all_heads = ("chfl", "local", "simple")
    jobs = [Job("table2", d, 5, 0.3, s, r, all_heads, cfg.rounds, lr=lr)
            for d in names for s in range(cfg.splits) for r in range(cfg.runs) for lr in cfg.lrs]
    sweep = "covertype" if "covertype" in names else (names[0] if names else None)
    if sweep is None:
        return jobs
    for n in cfg.clients:
        if n != 5:
            jobs += [Job("table3", sweep, n, 0.3, s, 0, ("chfl", "local"), cfg.rounds, lr=lr)
                     for s in range(cfg.sweep_splits) for lr in cfg.lrs]
    for ratio in cfg.ratios:
        if abs(ratio - 0.3) > 1e-9:
            jobs += [Job("fig4", sweep, 5, ratio, s, 0, ("chfl", "local"), cfg.rounds, lr=lr)
                     for s in range(cfg.sweep_splits) for lr in cfg.lrs]
    # the shared point's splits that Table II lacks (benchmarks.chfl_summary takes the sweep's splits only)
    jobs += [Job("fig4", sweep, 5, 0.3, s, 0, ("chfl", "local"), cfg.rounds, lr=lr)
             for s in range(cfg.splits, cfg.sweep_splits) for lr in cfg.lrs]
    lr = cfg.lrs[len(cfg.lrs) // 2]  # aggregation time does not depend on the learning rate
    jobs += [Job("timing", sweep, 5, 0.3, 0, 0, ("chfl",), cfg.timing_rounds, secure=flag, lr=lr)
             for flag in (True, False)]
    return jobs


@functools.lru_cache(maxsize=2)
def _dataset(name: str, data_dir: str | None) -> Any:
    """Each worker process loads (and checks) a dataset once."""
    from securefl.data.chfl_sets import load_chfl_dataset

    return load_chfl_dataset(name, data_dir=data_dir)


def run_job(job: Job, cfg: Config) -> dict[str, Any]:
    """Run one job in this process and keep only what the report needs."""
    import torch

    from securefl.algorithms.chfl import CHFLConfig, run_chfl
    from securefl.data.chfl_sets import chfl_partition

    torch.set_num_threads(1)
    partition = chfl_partition(_dataset(job.dataset, cfg.data_dir), n_clients=job.n_clients, common_ratio=job.ratio,
                               feature_seed=job.feature_seed, sample_seed=job.seed)
    config = CHFLConfig(rounds=job.rounds, lr=job.lr, mus=cfg.mus, heads=job.heads, seed=job.seed,
                        device=cfg.device)
    start = time.perf_counter()
    result = run_chfl(partition, config, secure_agg=job.secure)
    return {"job": asdict(job), "accuracy": {m: v["accuracy"] for m, v in result["methods"].items()},
            "clients": {m: v["clients"] for m, v in result["methods"].items()},
            "selected": {m: v["selected"] for m, v in result["methods"].items()},
            "last_round_accuracy": {m: v["last_round_accuracy"] for m, v in result["methods"].items()},
            "round_seconds": result["round_seconds"], "aggregation_seconds": result["aggregation_seconds"],
            "bytes": result["bytes"], "seconds": time.perf_counter() - start,
            "n_common": partition.settings["n_common"], "n_unique": partition.settings["n_unique"],
            "common_features": [_dataset(job.dataset, cfg.data_dir).feature_names[i]
                                for i in partition.common_columns]}


def run_all(jobs: Sequence[Job], cfg: Config) -> list[dict[str, Any]]:
    """Run ``jobs`` on ``cfg.workers`` processes (in this process when 1), printing each as it ends."""
    def show(out: dict[str, Any], *_: int) -> dict[str, Any]:
        j = out["job"]
        print(f"{j['experiment']} {j['dataset']} K={j['n_clients']} ratio={j['ratio']} split={j['feature_seed']}"
              f" run={j['seed']}: " + ", ".join(f"{m} {a:.4f}" for m, a in out["accuracy"].items())
              + f" lr={j['lr']:g} ({out['seconds']:.0f} s)", flush=True)
        return out

    if not jobs:
        return []
    if cfg.workers == 1:
        preload(cfg.device)
        return [show(run_job(j, cfg)) for j in jobs]
    return map_jobs(run_job, [(j, cfg) for j in jobs], workers=cfg.workers, device=cfg.device, threads=1,
                    on_done=show)


def run_planned(jobs: Sequence[Job], cfg: Config) -> list[dict[str, Any]]:
    """The training jobs on the worker pool, then the timing jobs alone: one after the other in this
    process, once the pool has finished, so secure and plain aggregation are timed under the same load."""
    timing = [j for j in jobs if j.experiment == "timing"]
    training = run_all([j for j in jobs if j.experiment != "timing"], cfg)
    return training + run_all(timing, replace(cfg, workers=1))


__all__ = ["Job", "plan", "run_all", "run_job", "run_planned"]
