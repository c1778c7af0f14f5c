"""What STFL's active party can rebuild of a passive party's features from the latents it receives.

    python -m benchmarks.latent_leakage [--quick] [--datasets breast,default_credit,give_credit]
                                        [--seeds 3] [--known 0.1,0.5] [--json FILE] [--markdown FILE]

Per dataset and seed, on the STFL benchmark's split, STFL runs as it does there (VAE
pretraining for 100 epochs; ``--quick``: the bundled breast set, 5 epochs) once per
way a passive party can send its rows: one posterior draw per row (the default) and
posterior means (``--latent mean``); the draws are seeded with the run's seed. The active
party's observe hook hands over each passive party's latents as its channel delivered them,
with their row IDs; its own classifier trains for one epoch only, since it does not change
what was received.

The attack (:func:`securefl.runtime.leakage.feature_reconstruction`): an active party
that also knows the features of a random share of the common rows fits a linear map
from latents to features on them and predicts the other rows. R² per feature, floored at 0
and averaged: 0 is no better than the known rows' mean, 1 rebuilds the features exactly. A linear
attacker gives a lower bound on what the latents reveal; the paper argues from the
latents' Gaussian distribution that they reveal nothing (its Section IV-B).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, count_option, dataset_names, markdown_header, markdown_table, named_report,
                               run_main, writable, write_json, write_text)

from benchmarks.stfl import DATASETS, PAPER_NAMES
from benchmarks.stats import mean_std, sample_std

QUICK_DATASETS = ("breast_sklearn",)
READINGS = ("mean", "sample")


@dataclass(frozen=True)
class Config:
    datasets: tuple[str, ...]
    seeds: int
    known: tuple[float, ...]
    vae_epochs: int
    quick: bool


def received_latents(split: Any, seed: int, reading: str, vae_epochs: int) -> dict[str, tuple[list[str], np.ndarray]]:
    """Each passive party's latents as the active party received them in an STFL run, with row IDs."""
    from securefl.algorithms.stfl import STFLConfig, run_stfl

    seen: dict[str, tuple[list[str], np.ndarray]] = {}
    config = STFLConfig(epochs=1, vae_epochs=vae_epochs, seed=seed, latent=reading, latent_seed=seed)
    run_stfl(split, config, observe=lambda name, ids, z: seen.__setitem__(name, (list(ids), z.copy())))
    return seen


def run_seed(dataset: Any, seed: int, config: Config) -> tuple[dict[str, Any], dict[str, int]]:
    """R² of the attack for every passive party, reading and known share, on ``seed``'s split;
    and each passive party's latent width."""
    from securefl.data import stfl_split
    from securefl.runtime.leakage import feature_reconstruction

    split = stfl_split(dataset, seed=seed)
    tables = {p.name: p for p in dataset.passive}
    out: dict[str, Any] = {}
    widths: dict[str, int] = {}
    for reading in READINGS:
        for name, (ids, latents) in received_latents(split, seed, reading, config.vae_epochs).items():
            widths[name] = int(latents.shape[1])
            row = {v: i for i, v in enumerate(tables[name].ids)}
            features = tables[name].features[[row[i] for i in ids]]
            for known in config.known:
                attack = feature_reconstruction(latents, features, known=known, seed=seed)
                out.setdefault(name, {}).setdefault(reading, {})[str(known)] = attack["r2"]
    return out, widths


def summarise(seeds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample std over seeds (nan, null in JSON, for one seed), per passive party, reading and
    known share."""
    out: dict[str, Any] = {}
    for name, readings in seeds[0].items():
        for reading, shares in readings.items():
            for known in shares:
                values = [s[name][reading][known] for s in seeds]
                std = sample_std(values)
                out.setdefault(name, {}).setdefault(reading, {})[known] = {"mean": statistics.fmean(values),
                                                                           "std": std, "n": len(values)}
    return out


def _cell(s: dict[str, Any]) -> str:
    """A cell, "mean ± std"; one seed has no spread, so "mean (n=1)" (n decides: older files stored std 0)."""
    return mean_std(s["mean"], s["std"], s.get("n", 2), digits=3, count=False)


def markdown(meta: dict[str, Any], results: dict[str, Any]) -> str:
    lines = [markdown_header("STFL: passive features rebuilt from the latents the active party receives", meta),
             "", "R² of a linear attacker that knows the features of a random share of the common rows "
             "(mean ± std over seeds; 0: nothing beyond the known rows' mean, 1: every feature exactly), each"
             " feature's floored at 0 before the mean over features: a fit worse than the known rows' mean"
             " counts as that mean, which the attacker can always keep.", ""]
    rows = []
    for name, res in results.items():
        for party, readings in res["summary"].items():
            for known in readings["mean"]:
                cells = [_cell(readings[r][known]) for r in READINGS]
                rows.append([PAPER_NAMES.get(name, name), party, res["features"][party], res["latent"][party],
                             f"{float(known):.0%}", *cells])
    lines.append(markdown_table(["dataset", "passive party", "features", "latent width", "rows known",
                                 "R² (posterior means)", "R² (one draw per row, the default)"], rows))
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> tuple[Config, Path, Path, Path | None]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latent_leakage", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="bundled breast_sklearn, 2 seeds, 5 VAE epochs (labelled)")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--seeds", type=count_option, default=3)
    p.add_argument("--known", default="0.1,0.5", help="shares of the common rows whose features the attacker knows")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    a = p.parse_args(argv)
    try:
        known = tuple(float(v) for v in a.known.split(","))
    except ValueError:
        p.error(f"--known must be comma-separated shares, got {a.known!r}")
    if a.seeds < 1 or not all(0.0 < k < 1.0 for k in known):
        p.error("--seeds must be at least 1 and every --known share strictly between 0 and 1")
    a.json = a.json or RESULTS_DIR / ("latent_leakage.quick.json" if a.quick else "latent_leakage.json")
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown)
    datasets = QUICK_DATASETS if a.quick else dataset_names(p, a.datasets, (*DATASETS, *QUICK_DATASETS))
    config = Config(datasets=datasets, seeds=2 if a.quick else a.seeds, known=known,
                    vae_epochs=5 if a.quick else 100, quick=a.quick)
    return config, a.json, a.markdown, a.data_dir


def main(argv: Sequence[str] | None = None) -> int:
    from protocols.errors import InputError
    from securefl.data import load_vertical

    config, json_path, md_path, data_dir = parse_args(argv)
    meta = named_report("latent_leakage", settings=asdict(config), quick=config.quick, argv=argv)
    try:  # every dataset before the first run: a missing file is one line, not a half-done run
        datasets = {name: load_vertical(name, data_dir=data_dir) for name in config.datasets}
    except InputError as exc:
        print(f"benchmarks.latent_leakage: error: {exc}", file=sys.stderr)
        return 2
    results = {}
    for name, dataset in datasets.items():
        runs = [run_seed(dataset, seed, config) for seed in range(config.seeds)]
        seeds = [r2 for r2, _ in runs]
        results[name] = {"seeds": seeds, "summary": summarise(seeds),
                         "features": {p.name: p.n_features for p in dataset.passive}, "latent": runs[0][1]}
        print(f"{name}: {results[name]['summary']}", flush=True)
    write_json(json_path, {**meta, "datasets": results})
    text = markdown(meta, results)
    write_text(md_path, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, "benchmarks.latent_leakage"))
