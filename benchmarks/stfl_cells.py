"""The cells of the STFL benchmark: every (dataset, seed, Table I row) run, on one process or a pool.

Kept apart from :mod:`benchmarks.stfl` (arguments, merging, rendering) so that a worker
process imports only what a cell needs, and each module stays small.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any, Callable

from benchmarks.checkpoint import CellLog
from benchmarks.stats import sample_std
from benchmarks.stfl_merge import STFL_ROWS

if TYPE_CHECKING:
    from benchmarks.stfl import Config


def methods(cfg: Config) -> list[tuple[str, bool, Callable[..., dict]]]:
    """(row name, all_data, runner(split, cfg, seed)) in Table I order; only ``cfg.rows`` if given."""
    from benchmarks.stfl_runs import run_centralized_row, run_he_vfl_row, run_hierarchical_row, run_stfl_row

    rows = [("centralized", False, run_centralized_row), ("centralized (all data)", True, run_centralized_row),
            ("hierarchical", False, run_hierarchical_row), ("hierarchical (all data)", True, run_hierarchical_row)]
    for he in cfg.he_backends:
        rows.append((f"he-vfl {he}", False, lambda s, c, seed, he=he: run_he_vfl_row(s, c, seed, he)))
    rows.append((f"he-vfl {cfg.he_backends[-1]} (all data)", True,
                 lambda s, c, seed: run_he_vfl_row(s, c, seed, cfg.he_backends[-1])))
    rows += [(row, False, lambda s, c, seed, latent=latent: run_stfl_row(s, c, seed, latent))
             for row, latent in STFL_ROWS.items()]
    return [r for r in rows if r[0] in cfg.rows] if cfg.rows is not None else rows


def load_datasets(cfg: Config) -> dict[str, Any]:
    """Every dataset asked for, loaded before any run: a missing file stops the benchmark at once."""
    from protocols.errors import SecureFLError
    from securefl.data import load_vertical

    try:
        return {name: load_vertical(name, data_dir=cfg.data_dir) for name in cfg.datasets}
    except SecureFLError as err:
        raise SystemExit(f"python -m benchmarks.stfl: {err}") from None


def run_datasets(datasets: dict[str, Any], cfg: Config, log: CellLog | None = None) -> list[dict[str, Any]]:
    """Every (dataset, seed, method) cell, on ``cfg.workers`` processes; Table I's runs and summary per dataset.

    With several workers the cells of every dataset share one pool, so a small
    dataset's cells fill the workers while a large one's run. With ``log`` each
    finished cell is kept as it ends, and the cells it already holds are not rerun."""
    cells = dict(log.done) if log is not None else {}
    rows = [name for name, _, _ in methods(cfg)]
    jobs = [(name, data, cfg, seed, index) for name, data in datasets.items() for seed in range(cfg.seeds)
            for index in range(len(rows)) if (name, rows[index], seed) not in cells]

    def finished(cell: tuple[str, str, int, dict, float], *_: int) -> None:
        _show(cell)
        cells[cell[:3]] = {"result": cell[3], "wall": cell[4]}
        if log is not None:
            log.add(cell[:3], cells[cell[:3]])

    if cfg.workers == 1:
        from securefl.runtime.preload import preload

        preload(cfg.device)  # the CUDA context and cuBLAS handle: not inside the first cell's time
        for job in jobs:
            finished(run_cell(*job))
    elif jobs:
        from benchmarks.pool import map_jobs

        map_jobs(run_cell, jobs, workers=cfg.workers, device=cfg.device, on_done=finished)
    out = []
    for name, data in datasets.items():
        runs = {row: [cells[(name, row, seed)]["result"] for seed in range(cfg.seeds)] for row in rows}
        out.append({"dataset": name, "rows": data.active.n_rows, "runs": runs, "summary": summarize(runs)})
    return out


def resumed(log: CellLog, name: str) -> dict[str, Any]:
    """``{"resumed": [...]}``: dataset ``name``'s cells kept from a stopped run (``--resume``), each with
    its row, seed and when and where it ran; {} when none was kept. The Markdown names them."""
    kept = [{"row": row, "seed": seed, **log.ran.get((d, row, seed), {})} for d, row, seed in log.done if d == name]
    return {"resumed": kept} if kept else {}


def run_cell(name: str, dataset: Any, cfg: Config, seed: int, index: int) -> tuple[str, str, int, dict, float]:
    """Method ``index`` (Table I order) on ``seed``'s split: (dataset, row, seed, result, wall seconds)."""
    from securefl.data import stfl_split
    from securefl.runtime import GPUPeak

    row, all_data, runner = methods(cfg)[index]
    split = stfl_split(dataset, seed=seed, all_data=all_data)
    start = time.perf_counter()
    with GPUPeak(cfg.device) as peak:
        result = runner(split, cfg, seed)
    peak.into(result)
    return name, row, seed, result, time.perf_counter() - start


def _show(cell: tuple[str, str, int, dict, float]) -> tuple[str, str, int, dict, float]:
    """Print one finished cell (as it ends, when cells run on workers)."""
    name, row, seed, result, wall = cell
    mode = f", {result['mode']}" if "mode" in result else ""
    print(f"{name} seed {seed} {row}: accuracy {result['metrics']['accuracy']:.4f}"
          f" ({wall:.1f} s{mode})", flush=True)
    return cell


def summarize(runs: dict[str, list[dict]]) -> dict[str, dict[str, Any]]:
    out = {}
    for row, results in runs.items():
        acc = [100 * r["metrics"]["accuracy"] for r in results]
        secs = [r["seconds"] for r in results]
        out[row] = {"accuracy_mean": statistics.fmean(acc),
                    "accuracy_std": sample_std(acc),
                    "seconds_mean": statistics.fmean(secs), "n": len(acc),
                    "modes": sorted({r.get("mode", "measured") for r in results})}
        peaks = [r["gpu_peak_mib"] for r in results if "gpu_peak_mib" in r]
        if peaks:  # --device cuda: the most GPU memory one seed's run took
            out[row]["gpu_peak_mib"] = max(peaks)
    return out


__all__ = ["load_datasets", "methods", "resumed", "run_cell", "run_datasets", "summarize"]
