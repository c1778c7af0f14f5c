"""TDCD (Das & Patterson): the training-loss curves of Fig. 2 (ridge regression) and Fig. 3 (CNN, MNIST).

    python -m benchmarks.tdcd [--quick] [--figures 2a,2b,2c,3a,3b] [--datasets tdcd_pol,...]
                              [--rounds N] [--seeds S] [--device cpu|cuda] [--data-dir DIR]
                              [--json FILE] [--markdown FILE] [--render-only]

Every run is the real protocol (:func:`securefl.algorithms.tdcd_hub.run_tdcd`): hubs average
their clients through secure aggregation and swap intermediate information; the training
objective after each evaluated round is computed by the federation with the averaged model,
over all training rows, as the paper plots it (x-axis: communication rounds, one per Q
iterations). Fig. 2 runs on the stored substitutes for Superconductivity (not stored here):
2a varies Q (N=4 silos, K=5 clients, B=100, eta=0.001, up to 20,000 training rows), 2b
varies N (2,000 rows, K=2, Q=4, B=20) and 2c varies K (2,000 rows, N=4, Q=4, B=500). For
the convex case the table also gives the ridge optimum (closed form on the same rows) and
each curve's gap to it. Fig. 3 runs the paper's CNN (two conv layers, a 256-dimensional
embedding per silo, the shared classifier split by silo) on MNIST's stored 10,000 test
images (the training images are not stored), N=2 halves of 28x14 pixels; so that a CPU
run takes minutes, its batch sizes are the paper's divided by ``MNIST_SCALE`` and its
20 rounds take SGD steps of 0.1 rather than 0.001 (the captions say so), 3a varying Q
(K=10) and 3b varying K with K x B fixed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, count_option, dataset_names, device_name, markdown_header, named_report,
                               read_result, rendered_line, rendered_stamp, run_main, writable, write_json, write_text)
from benchmarks.tdcd_report import markdown, plot_curves

REGRESSION = ("tdcd_pol", "tdcd_elevators", "tdcd_kegg", "superconductivity", "diabetes_sklearn")
QUICK_DATASET = "diabetes_sklearn"  # bundled: a quick run needs no files
MNIST_SCALE = 10
"""Fig. 3's batch sizes (B = 640 at K = 10; K x B = 1250) are divided by this on the default run."""
MNIST_LR = 0.1
"""Fig. 3's SGD step size: the paper's 0.001 barely moves a CNN in the 20 rounds a CPU run affords."""


@dataclass(frozen=True)
class Figure:
    """One panel: which setting varies over which values, the others fixed."""

    name: str
    dataset_kind: str  # "regression" or "mnist"
    vary: str
    values: tuple[int, ...]
    silos: int
    clients: int
    local_steps: int
    batch_size: int
    max_train: int | None
    lr: float
    rounds: int
    caption: str


FIGURES = {
    "2a": Figure("2a", "regression", "local_steps", (1, 5, 10, 25), 4, 5, 0, 100, 20000, 1e-3, 100,
                 "Q varies; N=4, K=5, B=100, eta=0.001"),
    "2b": Figure("2b", "regression", "silos", (1, 2, 4, 8), 0, 2, 4, 20, 2000, 1e-3, 300,
                 "N varies; K=2, Q=4, B=20, eta=0.001, 2,000 rows"),
    "2c": Figure("2c", "regression", "clients", (1, 2, 4), 4, 0, 4, 500, 2000, 1e-3, 300,
                 "K varies; N=4, Q=4, B=500, eta=0.001, 2,000 rows"),
    "3a": Figure("3a", "mnist", "local_steps", (1, 5, 10), 2, 10, 0, 640, None, MNIST_LR, 20,
                 f"Q varies; N=2, K=10, the paper's B=640 scaled down, eta={MNIST_LR} (paper: 0.001)"),
    "3b": Figure("3b", "mnist", "clients", (1, 2, 5, 10), 2, 0, 5, 1250, None, MNIST_LR, 20,
                 f"K varies with the paper's K x B = 1250 scaled down; N=2, Q=5, eta={MNIST_LR} (paper: 0.001)"),
}


@dataclass(frozen=True)
class Config:
    figures: tuple[str, ...]
    datasets: tuple[str, ...]
    rounds: int | None
    seeds: int
    eval_points: int
    mnist_scale: int
    device: str
    quick: bool


def setting(figure: Figure, value: int, config: Config) -> dict[str, Any]:
    """The silos, clients, Q, B and lr of one curve."""
    chosen = {"silos": figure.silos, "clients": figure.clients, "local_steps": figure.local_steps, figure.vary: value}
    batch = figure.batch_size
    if figure.name == "3b":
        batch = max(1, figure.batch_size // chosen["clients"])
    if figure.dataset_kind == "mnist":
        batch = max(1, batch // config.mnist_scale)
    return {**chosen, "batch_size": batch, "lr": figure.lr, "max_train": figure.max_train}


def ridge_optimum(split: Any, l2: float) -> float:
    """The ridge objective's minimum on the split's training rows (closed form), for the gap column."""
    from securefl.data.tdcd_sets import joined_training

    blocks, y = joined_training(split)
    x = np.hstack(blocks)
    theta = np.linalg.solve(x.T @ x / len(y) + l2 * np.eye(x.shape[1]), x.T @ y / len(y))
    return float(0.5 * np.mean((x @ theta - y) ** 2) + 0.5 * l2 * theta @ theta)


def run_curve(table: Any, figure: Figure, value: int, config: Config, seed: int) -> dict[str, Any]:
    """One curve of one panel for one seed."""
    from securefl.algorithms.tdcd import TDCDConfig
    from securefl.algorithms.tdcd_hub import run_tdcd
    from securefl.data.tdcd_sets import tiered_split

    s = setting(figure, value, config)
    split = tiered_split(table, silos=s["silos"], clients=s["clients"], seed=seed, max_train=s["max_train"])
    rounds = config.rounds or figure.rounds
    tdcd = TDCDConfig(rounds=rounds, local_steps=s["local_steps"], batch_size=s["batch_size"], lr=s["lr"],
                      l2=0.0 if figure.dataset_kind == "mnist" else TDCDConfig.l2, seed=seed, device=config.device,
                      eval_every=max(1, rounds // config.eval_points))
    start = time.perf_counter()
    result = run_tdcd(split, tdcd)
    out = {"seed": seed, "value": value, "setting": s, "history": result["history"],
           "metrics": result["metrics"], "seconds": time.perf_counter() - start,
           "bytes_by_purpose": result["bytes_by_purpose"], "n_train": split.n_train}
    if split.task == "regression":
        out["optimum"] = ridge_optimum(split, tdcd.l2)
    print(f"{figure.name} {table.name} {figure.vary}={value} seed {seed}: objective"
          f" {result['history'][0]['objective']:.4g} -> {result['history'][-1]['objective']:.4g}"
          f" in {out['seconds']:.1f} s", file=sys.stderr)
    return out


def run_figure(name: str, tables: dict[str, Any], config: Config) -> list[dict[str, Any]]:
    """Every dataset and curve of one panel."""
    figure = FIGURES[name]
    names = [d for d in config.datasets if d != "mnist"] if figure.dataset_kind == "regression" else ["mnist"]
    return [{"figure": name, "dataset": d, "vary": figure.vary, "caption": figure.caption,
             "curves": [run_curve(tables[d], figure, v, config, seed) for v in figure.values
                        for seed in range(config.seeds)]} for d in names]


def parse_args(argv: Sequence[str] | None) -> tuple[Config, Path, Path, Path | None, bool]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tdcd", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="2b and 2c on the bundled diabetes_sklearn, 4 rounds, one seed (labelled quick)")
    p.add_argument("--figures", default="2a,2b,2c,3a,3b", help="comma-separated panels (default: all)")
    p.add_argument("--datasets", default="tdcd_pol,tdcd_elevators,tdcd_kegg",
                   help="regression datasets for Fig. 2 (mnist runs Fig. 3)")
    p.add_argument("--rounds", type=count_option, default=None,
                   help="communication rounds of every panel (default: 2a 100, 2b and 2c 300, Fig. 3 20)")
    p.add_argument("--seeds", type=count_option, default=1)
    p.add_argument("--eval-points", type=count_option, default=20, help="objective evaluations per curve (default 20)")
    p.add_argument("--mnist-scale", type=count_option, default=MNIST_SCALE, help="divide Fig. 3's batch sizes by this")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--render-only", action="store_true", help="rewrite the Markdown and PNG from --json")
    a = p.parse_args(argv)
    for flag in ("rounds", "seeds", "eval_points", "mnist_scale"):
        if getattr(a, flag) is not None and getattr(a, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1")
    figures = tuple(f.strip() for f in a.figures.split(",") if f.strip())
    unknown = [f for f in figures if f not in FIGURES]
    if unknown or not figures:
        p.error(f"--figures: unknown panel(s) {unknown}; choose from {', '.join(FIGURES)}")
    a.json = a.json or RESULTS_DIR / ("tdcd.quick.json" if a.quick else "tdcd.json")
    a.markdown = a.markdown or a.json.with_suffix(".md")
    # the PNG goes beside the Markdown; --render-only reads --json and writes the other two
    writable(p, inputs={"json": a.json} if a.render_only else None, json=None if a.render_only else a.json,
             markdown=a.markdown, beside={"the PNG beside --markdown": a.markdown.with_suffix(".png")})
    datasets = dataset_names(p, a.datasets, REGRESSION)
    if a.quick:
        figures, datasets = ("2b", "2c"), (QUICK_DATASET,)
    config = Config(figures=figures, datasets=datasets, rounds=4 if a.quick else a.rounds,
                    seeds=1 if a.quick else a.seeds,
                    eval_points=2 if a.quick else a.eval_points, mnist_scale=a.mnist_scale,
                    device=device_name(p, a.device), quick=a.quick)
    return config, a.json, a.markdown, a.data_dir, a.render_only


def load_tables(config: Config, data_dir: Path | None) -> dict[str, Any]:
    """Every table the chosen panels need, before the first run (a missing file is one line)."""
    from dataclasses import replace

    from securefl.data.registry import load_registered

    names = set()
    for f in config.figures:
        names |= {"mnist"} if FIGURES[f].dataset_kind == "mnist" else set(config.datasets)
    return {n: replace(load_registered(n, kind="tdcd", data_dir=data_dir), name=n) for n in sorted(names)}


def main(argv: Sequence[str] | None = None) -> int:
    from protocols.errors import InputError
    from securefl.algorithms.tdcd import TDCDConfig

    config, json_path, md_path, data_dir, render_only = parse_args(argv)
    if render_only:
        return render(json_path, md_path)
    settings = {**asdict(config), "figures_spec": {f: asdict(FIGURES[f]) for f in config.figures},
                "l2": TDCDConfig.l2}  # the ridge figures' (the CNN's is 0)
    meta = named_report("tdcd", settings=settings, quick=config.quick, argv=argv, device=config.device)
    try:
        tables = load_tables(config, data_dir)
    except InputError as exc:
        print(f"benchmarks.tdcd: error: {exc}", file=sys.stderr)
        return 2
    panels = [panel for f in config.figures for panel in run_figure(f, tables, config)]
    write_json(json_path, {**meta, "panels": panels})
    return _write_report(meta, panels, md_path)


def _write_report(meta: dict[str, Any], panels: list[dict[str, Any]], md_path: Path) -> int:
    png = plot_curves(panels, md_path.with_suffix(".png"), quick=meta["quick"])
    header = markdown_header("TDCD: training objective per communication round (Fig. 2, Fig. 3)", meta)
    text = markdown(header + rendered_line(meta), panels, meta["settings"], png=png)
    write_text(md_path, text)
    print(text)
    return 0


def render(json_path: Path, md_path: Path) -> int:
    """Rewrite the Markdown and PNG of a stored result (its own date, commit and settings), saying
    when and at which commit its observations were re-derived."""
    stored = read_result(json_path, "--render-only", "tdcd", {"panels": list, "settings": dict})
    return _write_report({**stored, "rendered": rendered_stamp()}, stored["panels"], md_path)


if __name__ == "__main__":
    sys.exit(run_main(main, "benchmarks.tdcd"))
