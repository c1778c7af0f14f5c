"""What a party learns that it should not: HE-VFL's and STFL's passive party, the averaging server, TDCD's hubs.

    python -m benchmarks.leakage [--quick] [--datasets breast,default_credit,give_credit] [--seeds 5]
                                 [--steps 8] [--he ckks|paillier] [--json FILE] [--markdown FILE]
                                 [--render-only]

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

The averaging server of CHFL (digits) and GL (heart; not in ``--quick``): one short run
each with plain and with secure aggregation, every message recorded; what the server's
transport delivered (float values, masked 64-bit words and the share of their bits that
are 1) and the clients' accuracies, equal either way up to fixed-point error.

TDCD's hubs (bundled diabetes set): what hub0's transport delivered from the other hubs
in a short run with three silos, plain and secure, and with two silos, secure.

HE-VFL's key owner with ``--he ckks`` (:mod:`benchmarks.key_owner`): what the passive
party can read beyond dL/da, since it decrypts whole polynomials and every slot.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, count_option, dataset_names, named_report, read_result, rendered_stamp,
                               run_main, writable, write_json, write_text)
from benchmarks.key_owner import key_owner_views
from benchmarks.leakage_report import markdown, number_text
from benchmarks.stats import sample_std

DATASETS = ("breast", "default_credit", "give_credit")
KEY_OWNER_SEEDS = 3  # fresh keys and data per seed; about 25 s each here
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
    from baselines.he_vfl import HEVFLConfig, activation_bound_for, run_he_vfl
    from securefl.runtime.leakage import graded_view

    ds = split.dataset
    steps, observe = graded_view(dict(zip(ds.active.ids, ds.active.labels)), ds.passive[0].ids)
    run_he_vfl(split, HEVFLConfig(he=config.he, seed=seed, passive_seed=seed, share_seed=seed, max_steps=config.steps,
                                  max_eval_batches=1, activation_bound=activation_bound_for(ds.name)),
               observe=observe)  # repeatable by seed
    return steps


def stfl_view(split: Any, seed: int) -> dict[str, Any]:
    """What reached each STFL passive party, from its transport log."""
    from securefl.algorithms.stfl import STFLConfig, run_stfl
    from securefl.runtime.leakage import received

    logs = run_stfl(split, STFLConfig(epochs=1, vae_epochs=1, seed=seed, latent_seed=seed), record=True)["logs"]
    return {party.name: received(logs[party.name]) for party in split.dataset.passive}


def server_view(method: str, data: Any, *, secure: bool, seed: int = 0) -> dict[str, Any]:
    """One short run of CHFL (``data``: a partition) or GL (``data``: encoded clients) with every
    message recorded: what the averaging server's transport delivered, and the clients' accuracy."""
    from securefl.runtime.leakage import received

    if method == "chfl":
        from securefl.algorithms.chfl import CHFLConfig, run_chfl

        result = run_chfl(data, CHFLConfig(rounds=2, seed=seed), secure_agg=secure, record=True)
        accuracy, log = result["metrics"]["clients"], result["logs"]["server"]
    else:
        from securefl.algorithms.gl import method_result, paper_config, run_federated

        config = paper_config("gl_heart", epochs=3, seed=seed, secure=secure)
        outcome = run_federated(data, config, scope="global", record=True)
        accuracy = {c: m["accuracy"] for c, m in method_result("gl", "gl_heart", config, outcome)["metrics"]
                    ["clients"].items()}
        log = outcome["run"].logs["server"]
    return {"method": method, "aggregation": "secure" if secure else "plain", "client_accuracy": accuracy,
            **received(log)}


def server_views(quick: bool, data_dir: Path | None) -> list[dict[str, Any]]:
    """CHFL on digits (and, unless ``quick``, GL on heart), each with plain and with secure aggregation."""
    from securefl.data.chfl_sets import chfl_partition, load_chfl_dataset

    runs = {"chfl": chfl_partition(load_chfl_dataset("digits"), n_clients=3)}
    if not quick:
        from securefl.data.gl_sets import encode_clients
        from securefl.data.registry import load_registered

        runs["gl"] = encode_clients(load_registered("gl_heart", kind="gl", data_dir=data_dir).split(0))
    return [{"dataset": "digits" if method == "chfl" else "gl_heart", **server_view(method, data, secure=secure)}
            for method, data in runs.items() for secure in (False, True)]


def hub_view(silos: int, *, secure: bool) -> dict[str, Any]:
    """One short TDCD run on the bundled diabetes set, every message recorded: what hub0's transport
    delivered from the other hubs, and the final training objective."""
    from dataclasses import replace

    from securefl.algorithms.tdcd import TDCDConfig
    from securefl.algorithms.tdcd_hub import run_tdcd
    from securefl.data.tdcd_entries import load_diabetes_sklearn
    from securefl.data.tdcd_sets import tiered_split
    from securefl.runtime.leakage import received

    split = tiered_split(load_diabetes_sklearn(), silos=silos, clients=2, seed=0)
    config = replace(TDCDConfig(rounds=5, local_steps=5, batch_size=20, lr=0.05), secure=secure)
    result = run_tdcd(split, config, record=True)
    from_hubs = [m for m in result["logs"]["hub0"] if m.src.startswith("hub")]
    return {"silos": silos, "aggregation": "secure" if secure else "plain",
            "objective": result["metrics"]["train_objective"], **received(from_hubs)}


def hub_views() -> list[dict[str, Any]]:
    """TDCD's hub exchange with three silos (plain and masked) and with two (masked averaging only)."""
    return [hub_view(3, secure=False), hub_view(3, secure=True), hub_view(2, secure=True)]


def run_dataset(name: str, dataset: Any, config: Config) -> dict[str, Any]:
    """Every seed of one dataset: HE-VFL's attacked view and STFL's transport logs."""
    from securefl.data import stfl_split
    from securefl.runtime.leakage import leakage_over_steps

    seeds = []
    for seed in range(config.seeds):
        split = stfl_split(dataset, seed=seed)
        seeds.append({"seed": seed, "he_vfl": leakage_over_steps(he_vfl_view(split, config, seed)),
                      "stfl": stfl_view(split, seed)})
        print(f"{name} seed {seed}: HE-VFL norm AUROC {number_text(seeds[-1]['he_vfl']['norm_auroc'])} (oriented"
              f" {number_text(seeds[-1]['he_vfl']['norm_auroc_oriented'])}), cosine AUROC"
              f" {number_text(seeds[-1]['he_vfl']['cosine_auroc'])}; STFL passive float values received"
              f" {sum(p['float_values'] for p in seeds[-1]['stfl'].values())}", file=sys.stderr)
    return {"runs": seeds, "summary": summary(seeds)}


def summary(seeds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample std (n - 1, as every other result file; nan, null in JSON, for one seed) over
    seeds of each attack's AUROC; the most float values any STFL passive party got."""
    out: dict[str, Any] = {"seeds": len(seeds)}
    for key in ("norm_auroc", "norm_auroc_oriented", "cosine_auroc"):  # oriented: absent from older runs
        values = [s["he_vfl"][key] for s in seeds if s["he_vfl"].get(key) is not None]
        out[key] = statistics.fmean(values) if values else None
        out[f"{key}_std"] = sample_std(values) if values else None
    out["positive_rate"] = statistics.fmean(s["he_vfl"].get("positive_rate", float("nan")) for s in seeds)
    out["stfl_float_values"] = max(p["float_values"] for s in seeds for p in s["stfl"].values())
    out["stfl_kinds"] = sorted({k for s in seeds for p in s["stfl"].values() for k in p["kinds"]})
    return out


def parse_args(argv: Sequence[str] | None) -> tuple[Config, Path, Path, Path | None, bool]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.leakage", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="bundled breast_sklearn, 2 seeds, 2 steps (labelled quick)")
    p.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated vertical datasets")
    p.add_argument("--seeds", type=count_option, default=5)
    p.add_argument("--steps", type=count_option, default=8, help="HE-VFL training steps observed (default 8)")
    p.add_argument("--he", choices=("ckks", "paillier"), default="ckks")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--render-only", action="store_true", help="rewrite the Markdown from --json; run nothing")
    a = p.parse_args(argv)
    if a.seeds < 1 or a.steps < 1:
        p.error("--seeds and --steps must be at least 1")
    a.json = a.json or RESULTS_DIR / ("leakage.quick.json" if a.quick else "leakage.json")
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown)
    datasets = QUICK_DATASETS if a.quick else dataset_names(p, a.datasets, (*DATASETS, *QUICK_DATASETS))
    config = Config(datasets=datasets, seeds=2 if a.quick else a.seeds, steps=2 if a.quick else a.steps,
                    he=a.he, quick=a.quick)
    return config, a.json, a.markdown, a.data_dir, a.render_only


def main(argv: Sequence[str] | None = None) -> int:
    from protocols.errors import InputError
    from securefl.data import load_vertical

    config, json_path, md_path, data_dir, render_only = parse_args(argv)
    if render_only:
        return render(json_path, md_path)
    meta = named_report("leakage", settings=asdict(config), quick=config.quick, argv=argv)
    try:  # every dataset before the first run: a missing file is one line, not a half-done run
        datasets = {name: load_vertical(name, data_dir=data_dir) for name in config.datasets}
        if not config.quick:
            from securefl.data.registry import load_registered

            load_registered("gl_heart", kind="gl", data_dir=data_dir)
    except InputError as exc:
        print(f"benchmarks.leakage: error: {exc}", file=sys.stderr)
        return 2
    results = {name: run_dataset(name, dataset, config) for name, dataset in datasets.items()}
    views, hubs = server_views(config.quick, data_dir), hub_views()
    keys = key_owner_views(1 if config.quick else KEY_OWNER_SEEDS, quick=config.quick) if config.he == "ckks" else []
    write_json(json_path, {**meta, "datasets": results, "server_view": views, "hub_view": hubs,
                           "key_owner_view": keys})
    text = markdown(meta, results, views, config, hubs, keys)
    write_text(md_path, text)
    print(text)
    return 0


def render(json_path: Path, md_path: Path) -> int:
    """Rewrite the Markdown of a stored result (its own date, commit and settings). Each dataset's
    summary is recomputed from its stored runs, so a fixed statistic reaches older files; the
    JSON gets the same summaries and says when and at which commit they were re-derived."""
    stored = read_result(json_path, "--render-only", "leakage",
                         {"datasets": dict, "server_view": list, "settings": dict})
    settings = stored["settings"]
    config = Config(**{**settings, "datasets": tuple(settings["datasets"])})
    datasets = {name: _resummarised(name, result) for name, result in stored["datasets"].items()}
    meta = {**stored, "datasets": datasets, "rendered": rendered_stamp()}
    text = markdown(meta, datasets, stored["server_view"], config, stored.get("hub_view", []),
                    stored.get("key_owner_view", []))
    write_json(json_path, meta)
    write_text(md_path, text)
    print(text)
    return 0


def _resummarised(name: str, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict) or not isinstance(result.get("runs"), list) or not result["runs"]:
        raise SystemExit(f"benchmarks.leakage: error: --render-only: dataset {name!r} has no stored runs")
    return {**result, "summary": summary(result["runs"])}


if __name__ == "__main__":
    sys.exit(run_main(main, "benchmarks.leakage"))
