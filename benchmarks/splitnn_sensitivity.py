"""How far float-level noise alone moves the split NN's final accuracy over a long run.

    python -m benchmarks.splitnn_sensitivity [--quick] [--dataset default_credit] [--seed 0]
        [--epochs 100] [--draws 8] [--jitter 1e-8] [--projection FILE] --json FILE [--markdown FILE]

HE-VFL's protocol trains to the plaintext split NN's weights only up to CKKS error (about
1e-8 of each product) or fixed-point rounding (Paillier), and over thousands of steps such
differences grow: ``benchmarks.he_projection`` found payment's full CKKS run 1.15 points
under the split NN that ``benchmarks.stfl`` reports for it. This trains that split NN (the
benchmark cell's own settings) once as it is and ``--draws`` times with the passive
party's features perturbed by Gaussian noise of ``--jitter`` times each column's standard
deviation, one draw per run, and reports the spread of the final test accuracy: how much
of a gap float-level noise alone explains. ``--projection`` puts a ``benchmarks.he_projection``
result of the same dataset, seed and epochs beside it. The noise is seeded by the draw's
index (it perturbs a measurement, it protects nothing), so a run repeats.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, config_report, count_option, device_name, markdown_header, markdown_table,
                               read_result, run_main, writable, write_json, write_text)
from benchmarks.he_projection import DATASETS
from benchmarks.stats import mean_std, sample_std

QUICK = {"dataset": "breast_sklearn", "epochs": 2, "draws": 2}


@dataclass(frozen=True)
class Config:
    """One cell's split NN, ``draws`` perturbed copies of it, and the perturbation's relative size."""

    dataset: str
    seed: int
    epochs: int
    draws: int
    jitter: float
    device: str
    quick: bool
    json_path: Path
    markdown_path: Path
    data_dir: Path | None = None
    projection: Path | None = None


def parse_args(argv: Sequence[str] | None) -> Config:
    p = argparse.ArgumentParser(prog="python -m benchmarks.splitnn_sensitivity",
                                description=__doc__.split("\n\n")[1].strip())
    p.add_argument("--quick", action="store_true", help=f"bundled data, {QUICK['epochs']} epochs, "
                                                        f"{QUICK['draws']} draws (labelled quick)")
    p.add_argument("--dataset", choices=DATASETS, default="default_credit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=count_option, default=100)
    p.add_argument("--draws", type=count_option, default=8)
    p.add_argument("--jitter", type=float, default=1e-8, help="noise std relative to each feature's std")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--projection", type=Path, default=None, help="a benchmarks.he_projection result to compare")
    p.add_argument("--json", type=Path, default=None,
                   help="default benchmarks/results/splitnn_sensitivity.json (.quick.json with --quick)")
    p.add_argument("--markdown", type=Path, default=None, help="default: the --json path with .md")
    a = p.parse_args(argv)
    if a.seed < 0 or min(a.epochs, a.draws) < 1:
        p.error(f"--seed must be >= 0 and --epochs, --draws >= 1, got {a.seed}, {a.epochs}, {a.draws}")
    if not 0.0 < a.jitter < 1.0:
        p.error(f"--jitter must be in (0, 1), got {a.jitter}")
    device_name(p, a.device)
    if a.quick and any(getattr(a, k) != p.get_default(k) for k in QUICK):
        p.error(f"--quick sets {', '.join(f'--{k}' for k in QUICK)} itself; give them without --quick")
    a.json = a.json or RESULTS_DIR / ("splitnn_sensitivity.quick.json" if a.quick else "splitnn_sensitivity.json")
    markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=markdown)
    sizes = QUICK if a.quick else {"dataset": a.dataset, "epochs": a.epochs, "draws": a.draws}
    cfg = Config(seed=a.seed, jitter=a.jitter, device=a.device, quick=a.quick, json_path=a.json,
                 markdown_path=markdown, data_dir=a.data_dir, projection=a.projection, **sizes)
    if cfg.projection is not None:
        projection_accuracy(cfg)  # a wrong file stops the run before it starts
    return cfg


def projection_accuracy(cfg: Config) -> float:
    """The protocol's own accuracy from ``--projection``; SystemExit unless it ran this cell."""
    stored = read_result(cfg.projection, "--projection", "he_projection", {"settings": dict, "measured": dict})
    ran = {k: stored["settings"].get(k) for k in ("dataset", "seed", "epochs")}
    if ran != {"dataset": cfg.dataset, "seed": cfg.seed, "epochs": cfg.epochs}:
        raise SystemExit(f"--projection: {cfg.projection} ran {ran}, not this cell")
    return float(stored["measured"]["metrics"]["accuracy"])


def perturbed(split: Any, jitter: float, draw: int) -> Any:
    """``split`` with every passive party's features plus N(0, (jitter * column std)^2) noise."""
    rng = np.random.default_rng(draw)
    parties = tuple(replace(t, features=t.features + rng.standard_normal(t.features.shape)
                            * (jitter * t.features.std(axis=0))) for t in split.dataset.passive)
    return replace(split, dataset=replace(split.dataset, passive=parties))


def run(cfg: Config) -> dict[str, Any]:
    """The unperturbed split NN, then each perturbed draw: their test metrics."""
    from baselines.splitnn import train_splitnn
    from benchmarks.stfl_runs import he_vfl_config
    from protocols.errors import SecureFLError
    from securefl.data import load_vertical, stfl_split

    try:
        split = stfl_split(load_vertical(cfg.dataset, data_dir=cfg.data_dir), seed=cfg.seed)
    except SecureFLError as err:
        raise SystemExit(f"python -m benchmarks.splitnn_sensitivity: {err}") from None
    config = he_vfl_config(split, cfg, cfg.seed, "ckks")  # reads epochs and device; the backend plays no part
    base = train_splitnn(split, config)["metrics"]
    draws = []
    for draw in range(cfg.draws):
        draws.append(train_splitnn(perturbed(split, cfg.jitter, draw), config)["metrics"])
        print(f"draw {draw}: accuracy {draws[-1]['accuracy']:.4f}", flush=True)
    acc = [d["accuracy"] for d in draws]
    summary = {"unperturbed": base["accuracy"], "mean": statistics.fmean(acc), "min": min(acc), "max": max(acc),
               "std": sample_std(acc),
               "max_abs_shift": max(abs(a - base["accuracy"]) for a in acc)}
    return {"unperturbed": base, "draws": draws, "summary": summary}


def to_markdown(report: dict[str, Any]) -> str:
    s, summary = report["settings"], report["summary"]
    rows = [("unperturbed", f"{100 * report['unperturbed']['accuracy']:.2f}")]
    rows += [(f"draw {i}", f"{100 * d['accuracy']:.2f}") for i, d in enumerate(report["draws"])]
    if "protocol_accuracy" in report:
        rows.append(("HE-VFL through the protocol (benchmarks.he_projection)",
                     f"{100 * report['protocol_accuracy']:.2f}"))
    shift = 100 * summary["max_abs_shift"]
    return (f"{markdown_header('Split NN: final accuracy under float-level noise', report)}\n"
            f"{s['dataset']}, seed {s['seed']}, {s['epochs']} epochs: the split NN of `benchmarks.stfl`'s HE-VFL "
            f"cell, and {s['draws']} copies whose passive features carry Gaussian noise of {s['jitter']:g} x each "
            f"column's std.\n\n{markdown_table(['run', 'test accuracy (%)'], rows)}\n"
            f"Perturbed: {mean_std(summary['mean'], summary['std'], len(report['draws']), digits=2, scale=100)} (range "
            f"{100 * summary['min']:.2f}–{100 * summary['max']:.2f}); the largest move from the unperturbed run "
            f"is {shift:.2f} points.\n")


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    report = config_report("splitnn_sensitivity", cfg, argv)
    report.update(run(cfg))
    if cfg.projection is not None:
        report["protocol_accuracy"] = projection_accuracy(cfg)
    write_json(cfg.json_path, report)
    write_text(cfg.markdown_path, to_markdown(report))
    print(f"wrote {cfg.json_path} and {cfg.markdown_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.splitnn_sensitivity"))
