"""What a passive party learns of the active party's labels: HE-VFL against STFL.

    python -m benchmarks.leakage [--quick] [--datasets breast,default_credit,give_credit] [--seeds 5]
                                 [--steps 8] [--he ckks|paillier] [--json FILE] [--markdown FILE]

Per dataset and seed, on the STFL benchmark's split (40% self-taught, 40% train, 20% test):

- HE-VFL runs through the real protocol for its first ``--steps`` training steps. Its
  passive party decrypts dL/da for its rows of each batch (the STFL paper's Algorithm 2,
  last line); the role's ``observe`` hook hands over exactly that, with the batch's rows.
  The norm and cosine label-inference attacks (:mod:`securefl.runtime.leakage`) score
  each batch's rows from those gradients alone; each attack's AUROC against the true
  labels is averaged over the steps (0.5: nothing learnt; 1.0: every label).
- STFL runs with every message recorded. What reached each passive party is read from
  its transport log: the message kinds and the number of float values among them
  (labels, gradients and model outputs could only arrive as floats). With none, there
  is no gradient to attack. The passive parties' messages do not depend on the epoch
  count, so STFL runs one VAE epoch and one training epoch here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, dataset_names, markdown_header, markdown_table, metadata, run_main,
                               writable, write_json, write_text)

DATASETS = ("breast", "default_credit", "give_credit")
QUICK_DATASETS = ("breast_sklearn",)  # bundled: runs without $SECUREFL_DATA


@dataclass(frozen=True)
class Config:
    datasets: tuple[str, ...]
    seeds: int
    steps: int
    he: str
    quick: bool


def he_vfl_view(split: Any, config: Config, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(labels, dL/da) of each training step, as HE-VFL's passive party decrypted them."""
    from baselines.he_vfl import HEVFLConfig, run_he_vfl
    from benchmarks.stfl_runs import ACTIVATION_BOUND

    ds = split.dataset
    active, passive = ds.active, ds.passive[0]
    bound = {"activation_bound": ACTIVATION_BOUND[ds.name]} if ds.name in ACTIVATION_BOUND else {}
    labels = dict(zip(active.ids, active.labels))
    steps: list[tuple[np.ndarray, np.ndarray]] = []

    def observe(step: int, rows: np.ndarray, grad: np.ndarray) -> None:
        steps.append((np.array([labels[passive.ids[r]] for r in rows]), grad))

    run_he_vfl(split, HEVFLConfig(he=config.he, seed=seed, max_steps=config.steps, max_eval_batches=1, **bound),
               observe=observe)
    return steps


def stfl_view(split: Any, seed: int) -> dict[str, Any]:
    """What reached each STFL passive party, from its transport log."""
    from securefl.algorithms.stfl import STFLConfig, run_stfl
    from securefl.runtime.leakage import received

    logs = run_stfl(split, STFLConfig(epochs=1, vae_epochs=1, seed=seed), record=True)["logs"]
    return {party.name: received(logs[party.name]) for party in split.dataset.passive}


def run_dataset(name: str, dataset: Any, config: Config) -> dict[str, Any]:
    """Every seed of one dataset: HE-VFL's attacked view and STFL's transport logs."""
    from securefl.data import stfl_split
    from securefl.runtime.leakage import leakage_over_steps

    seeds = []
    for seed in range(config.seeds):
        split = stfl_split(dataset, seed=seed)
        seeds.append({"seed": seed, "he_vfl": leakage_over_steps(he_vfl_view(split, config, seed)),
                      "stfl": stfl_view(split, seed)})
        print(f"{name} seed {seed}: HE-VFL norm AUROC {_num(seeds[-1]['he_vfl']['norm_auroc'])}, cosine AUROC"
              f" {_num(seeds[-1]['he_vfl']['cosine_auroc'])}; STFL passive float values received"
              f" {sum(p['float_values'] for p in seeds[-1]['stfl'].values())}", file=sys.stderr)
    return {"runs": seeds, "summary": summary(seeds)}


def summary(seeds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and std over seeds of each attack's AUROC; the most float values any STFL passive party got."""
    out: dict[str, Any] = {"seeds": len(seeds)}
    for key in ("norm_auroc", "cosine_auroc"):
        values = [s["he_vfl"][key] for s in seeds if s["he_vfl"][key] is not None]
        out[key] = statistics.fmean(values) if values else None
        out[f"{key}_std"] = statistics.pstdev(values) if len(values) > 1 else 0.0 if values else None
    out["positive_rate"] = statistics.fmean(s["he_vfl"].get("positive_rate", float("nan")) for s in seeds)
    out["stfl_float_values"] = max(p["float_values"] for s in seeds for p in s["stfl"].values())
    out["stfl_kinds"] = sorted({k for s in seeds for p in s["stfl"].values() for k in p["kinds"]})
    return out


def _num(value: float | None, std: float | None = None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" ± {std:.3f}" if std is not None else "")


def markdown(meta: dict[str, Any], results: dict[str, Any], config: Config) -> str:
    rows = []
    for name, res in results.items():
        s = res["summary"]
        stfl = ("nothing to attack: no float value received" if s["stfl_float_values"] == 0 else
                f"{s['stfl_float_values']:,} float values received")
        rows.append([name, s["seeds"], f"{s['positive_rate']:.3f}", _num(s["norm_auroc"], s["norm_auroc_std"]),
                     _num(s["cosine_auroc"], s["cosine_auroc_std"]), stfl, ", ".join(s["stfl_kinds"])])
    return "\n".join([
        markdown_header("Label leakage to the passive party: HE-VFL against STFL", meta),
        f"HE-VFL ({config.he}) through the protocol for its first {config.steps} training steps; the passive"
        " party's decrypted dL/da per row is attacked per batch (norm attack: no label known; cosine attack:"
        " one positive row of the batch known, left out of the grading). AUROC 0.5 means the attack learns"
        " nothing, 1.0 that it recovers every label, and one far below 0.5 leaks as much (the score orders the"
        " classes the other way round); mean ± std over seeds of the mean over steps. Early in training every"
        " prediction is near the class rate, so the norms differ little and the norm attack is weak; the"
        " gradients' direction gives the labels away from the first step. STFL: what each passive party's"
        " transport delivered (1 VAE epoch, 1 training epoch).",
        "",
        markdown_table(["dataset", "seeds", "positive rate", "HE-VFL norm attack AUROC",
                        "HE-VFL cosine attack AUROC", "STFL passive party", "STFL messages received"], rows),
    ])


def parse_args(argv: Sequence[str] | None) -> tuple[Config, Path, Path, Path | None]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.leakage", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="bundled breast_sklearn, 2 seeds, 2 steps (labelled quick)")
    p.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated vertical datasets")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=8, help="HE-VFL training steps observed (default 8)")
    p.add_argument("--he", choices=("ckks", "paillier"), default="ckks")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    a = p.parse_args(argv)
    if a.seeds < 1 or a.steps < 1:
        p.error("--seeds and --steps must be at least 1")
    a.json = a.json or RESULTS_DIR / ("leakage.quick.json" if a.quick else "leakage.json")
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown)
    datasets = QUICK_DATASETS if a.quick else dataset_names(p, a.datasets, (*DATASETS, *QUICK_DATASETS))
    config = Config(datasets=datasets, seeds=2 if a.quick else a.seeds, steps=2 if a.quick else a.steps,
                    he=a.he, quick=a.quick)
    return config, a.json, a.markdown, a.data_dir


def main(argv: Sequence[str] | None = None) -> int:
    from protocols.errors import InputError
    from securefl.data import load_vertical

    config, json_path, md_path, data_dir = parse_args(argv)
    meta = metadata(settings=asdict(config), quick=config.quick,
                    argv=["benchmarks.leakage", *(sys.argv[1:] if argv is None else argv)])
    try:  # every dataset before the first run: a missing file is one line, not a half-done run
        datasets = {name: load_vertical(name, data_dir=data_dir) for name in config.datasets}
    except InputError as exc:
        print(f"benchmarks.leakage: error: {exc}", file=sys.stderr)
        return 2
    results = {name: run_dataset(name, dataset, config) for name, dataset in datasets.items()}
    write_json(json_path, {**meta, "datasets": results})
    write_text(md_path, markdown(meta, results, config))
    print(markdown(meta, results, config))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, "benchmarks.leakage"))
