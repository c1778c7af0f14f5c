"""How far CHFL's feature splits can go: strong non-neural learners on benchmarks.chfl's own partitions.

    python -m benchmarks.chfl_reference [--quick] [--datasets covertype,digits] [--splits 30]
                                        [--clients 2,5,10] [--sweep-splits 5] [--compare FILE]
                                        [--data-dir DIR] --json FILE [--markdown FILE]

CHFL's covertype results sit several points under the paper's (benchmarks/results/chfl.md).
This benchmark asks whether the features each method sees allow the paper's numbers
at all. On exactly the partitions benchmarks.chfl trains on (same feature splits,
sample seed 0, 30% common features), it fits learners that need no federation and
no tuning by the client:

- pooled common: gradient-boosted trees on every client's training rows, common
  features only: a centralized model that sees everything FedAvg over the common
  features (the paper's Common) can use;
- local GBM and local extra trees: each client alone on all its own features, the
  paper's Local with another learner;
- pooled all: gradient-boosted trees on every client's training rows and every
  feature, what one party holding all of the data reaches (fitted once per dataset
  and client count: it does not depend on the feature split).

Each is scored on each client's own test rows and averaged over clients, as
benchmarks.chfl does. ``--compare`` reads a benchmarks.chfl result file and puts its
MLP numbers beside them, per split; the report also gives, because the paper averages
three random feature splits, the best mean over any three of the splits run here.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.chfl_merge import stored_runs
from benchmarks.common import (RESULTS_DIR, count_option, dataset_names, markdown_header, named_report, read_result,
                               rendered_line, rendered_stamp, run_main, writable, write_json, write_text)
from protocols.errors import InputError

DATASETS = ("covertype", "digits")
RATIO = 0.3
LEARNERS = ("pooled_common", "local_gbm", "local_trees", "pooled_all")
GBM = {"max_iter": 200, "learning_rate": 0.1, "early_stopping": False}
"""scikit-learn HistGradientBoostingClassifier settings (its defaults, early stopping off so every fit is alike;
``--quick`` fits 50 rounds)."""
TREES = 300
"""Extra trees per forest (scikit-learn ExtraTreesClassifier, otherwise its defaults)."""


@dataclass(frozen=True)
class Config:
    datasets: tuple[str, ...]
    splits: int
    sweep_splits: int
    clients: tuple[int, ...]
    trees: int
    gbm: dict[str, Any]
    quick: bool
    json_path: Path
    markdown_path: Path
    compare: Path | None
    data_dir: str | None
    render_only: bool = False


@dataclass(frozen=True)
class Job:
    """One partition: a dataset divided among ``n_clients`` by feature split ``feature_seed`` (sample seed 0)."""

    dataset: str
    n_clients: int
    feature_seed: int


def parse_args(argv: Sequence[str] | None) -> Config:
    p = argparse.ArgumentParser(prog="python -m benchmarks.chfl_reference", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="digits, 5 clients, 1 split, 50 trees, 50 boosting rounds (labelled quick)")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--splits", type=count_option, default=30,
                   help="feature splits at 5 clients (benchmarks.chfl ran the first 10: its --splits)")
    p.add_argument("--sweep-splits", type=count_option, default=5,
                   help="feature splits at each other client count (benchmarks.chfl --sweep-splits)")
    p.add_argument("--clients", default="2,5,10", help="client counts (the first dataset only, as benchmarks.chfl)")
    p.add_argument("--data-dir", default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--compare", type=Path, default=None,
                   help="a benchmarks.chfl result file whose MLP runs to put beside these "
                        "(default: benchmarks/results/chfl.json, when it exists and this is not --quick)")
    p.add_argument("--json", type=Path, default=None,
                   help="default benchmarks/results/chfl_reference.json (.quick.json with --quick)")
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--render-only", action="store_true",
                   help="rewrite the Markdown from an existing --json file without running anything; with"
                        " --compare, first replace its MLP runs by that file's")
    a = p.parse_args(argv)
    a.json = a.json or RESULTS_DIR / ("chfl_reference.quick.json" if a.quick else "chfl_reference.json")
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown, inputs={"compare": a.compare})
    if min(a.splits, a.sweep_splits) < 1:
        p.error("--splits and --sweep-splits must be >= 1")
    try:
        clients = tuple(sorted({int(c) for c in a.clients.split(",")}))
    except ValueError:
        clients = ()
    if not clients or min(clients) < 2:
        p.error(f"--clients must list integers >= 2, separated by commas; got {a.clients!r}")
    compare = a.compare
    if compare is None and not a.quick and not a.render_only and (RESULTS_DIR / "chfl.json").is_file():
        compare = RESULTS_DIR / "chfl.json"
    quick = a.quick
    return Config(datasets=("digits",) if quick else dataset_names(p, a.datasets, DATASETS),
                  splits=1 if quick else a.splits, sweep_splits=1 if quick else a.sweep_splits,
                  clients=(5,) if quick else clients, trees=50 if quick else TREES,
                  gbm={**GBM, "max_iter": 50} if quick else GBM, quick=quick,
                  json_path=a.json, markdown_path=a.markdown, compare=compare, data_dir=a.data_dir,
                  render_only=a.render_only)


def plan(cfg: Config) -> list[Job]:
    """benchmarks.chfl's partitions: Table II's splits per dataset, and its client sweep on the first dataset."""
    jobs = [Job(d, 5, s) for d in cfg.datasets for s in range(cfg.splits)]
    jobs += [Job(cfg.datasets[0], k, s) for k in cfg.clients if k != 5 for s in range(cfg.sweep_splits)]
    return jobs


def _accuracy(model: Any, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(x) == y))


def reference_run(dataset: Any, partition: Any, *, trees: int = TREES, gbm_settings: dict[str, Any] = GBM,
                  seed: int = 0, pooled_all: list[float] | None = None) -> dict[str, list[float]]:
    """Each learner's test accuracy per client of ``partition``, a CHFLPartition of ``dataset`` (sample seed 0).

    ``pooled_all``: that learner's accuracies from another split of the same rows (it uses every feature, so
    the feature split does not change it); fitted here when None.
    """
    from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier

    from securefl.data.chfl_partition import sample_rows

    def gbm() -> Any:
        return HistGradientBoostingClassifier(**gbm_settings, random_state=seed)

    def own(split: Any) -> np.ndarray:
        return np.hstack([split.common, split.unique])

    clients = partition.clients
    y_pool = np.concatenate([c.train.labels for c in clients])
    pooled_common = gbm().fit(np.vstack([c.train.common for c in clients]), y_pool)
    out: dict[str, list[float]] = {name: [] for name in LEARNERS}
    for c in clients:
        out["pooled_common"].append(_accuracy(pooled_common, c.test.common, c.test.labels))
        out["local_gbm"].append(_accuracy(gbm().fit(own(c.train), c.train.labels), own(c.test), c.test.labels))
        forest = ExtraTreesClassifier(trees, n_jobs=-1, random_state=seed).fit(own(c.train), c.train.labels)
        out["local_trees"].append(_accuracy(forest, own(c.test), c.test.labels))
    if pooled_all is None:
        # the partition's rows (same sample seed), every feature of the dataset
        train_rows, _, test_rows = sample_rows(len(dataset.labels), len(clients), partition.settings["sample_seed"])
        model = gbm().fit(dataset.features[np.concatenate(train_rows)], y_pool)
        pooled_all = [_accuracy(model, dataset.features[rows], c.test.labels) for c, rows in zip(clients, test_rows)]
    out["pooled_all"] = list(pooled_all)
    return out


def run_job(job: Job, cfg: Config, dataset: Any, pooled: dict[tuple[str, int], list[float]]) -> dict[str, Any]:
    """One partition's reference accuracies (mean over clients, and per client); ``pooled`` keeps the
    pooled-all accuracies per (dataset, clients) from one split to the next."""
    from securefl.data.chfl_partition import chfl_partition

    partition = chfl_partition(dataset, n_clients=job.n_clients, common_ratio=RATIO,
                               feature_seed=job.feature_seed, sample_seed=0)
    start = time.perf_counter()
    key = (job.dataset, job.n_clients)
    clients = reference_run(dataset, partition, trees=cfg.trees, gbm_settings=cfg.gbm, pooled_all=pooled.get(key))
    pooled[key] = clients["pooled_all"]
    out = {"job": asdict(job), "accuracy": {k: float(np.mean(v)) for k, v in clients.items()},
           "clients": clients, "seconds": time.perf_counter() - start,
           "common_features": [dataset.feature_names[i] for i in partition.common_columns],
           "unique_features": [[dataset.feature_names[i] for i in c.unique_columns] for c in partition.clients]}
    print(f"{job.dataset} K={job.n_clients} split={job.feature_seed}: "
          + ", ".join(f"{k} {v:.4f}" for k, v in out["accuracy"].items()) + f" ({out['seconds']:.0f} s)", flush=True)
    return out


def _shown(path: Path | None) -> str | None:
    """``path`` as recorded in a result: relative to the repository root when inside it."""
    if path is None:
        return None
    try:
        return str(path.resolve().relative_to(RESULTS_DIR.parent.parent))
    except ValueError:
        return str(path)


def mlp_runs(path: Path | None, quick: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header (with its quick flag and rounds) and the fixed-lr 30%-common runs of a benchmarks.chfl
    result file (none without ``path``). A ``--quick`` file only goes beside a ``quick`` reference run."""
    if path is None:
        return {}, []
    old = read_result(path, "--compare", "chfl", {"runs": list, "settings": dict})
    if old.get("quick") and not quick:
        raise SystemExit(f"--compare: {path} is a --quick benchmarks.chfl result (reduced rounds and splits);"
                         " give a full one, or make this a --quick run")
    runs = [r for r in stored_runs(old, "--compare") if r["job"].get("experiment") in ("table2", "table3")
            and math.isclose(r["job"].get("ratio", 0), RATIO) and r["job"].get("seed") == 0]
    lrs = {r["job"]["lr"] for r in runs}
    if len(lrs) > 1:  # a tuned file holds one run per lr; its per-client choice is benchmarks.chfl's business
        raise SystemExit(f"--compare: {path} holds runs at several learning rates {sorted(lrs)};"
                         " give a fixed-lr benchmarks.chfl result (e.g. benchmarks/results/chfl.json)")
    header = {k: old.get(k) for k in ("date", "commit", "command", "quick")}
    return {**header, "rounds": old["settings"].get("rounds")}, runs


def mlp_section(header: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a result keeps of the compared MLP runs: their file's header, and each run's job and accuracy."""
    return {"source": header, "runs": [{k: r[k] for k in ("job", "accuracy")} for r in runs]}


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.chfl_reference_report import summarize
    from securefl.data.chfl_sets import load_chfl_dataset

    cfg = parse_args(argv)
    if cfg.render_only:
        return render_only(cfg)
    mlp_header, mlp = mlp_runs(cfg.compare, cfg.quick)
    settings = {"datasets": list(cfg.datasets), "splits": cfg.splits, "sweep_splits": cfg.sweep_splits,
                "clients": list(cfg.clients), "common_ratio": RATIO, "sample_seed": 0, "gbm": cfg.gbm,
                "extra_trees": cfg.trees, "compare": _shown(cfg.compare),
                "scored": "each client's own test rows, mean over clients (as benchmarks.chfl)"}
    report = named_report("chfl_reference", settings=settings, quick=cfg.quick, argv=argv)
    try:
        data = {name: load_chfl_dataset(name, data_dir=cfg.data_dir) for name in cfg.datasets}
    except InputError as err:
        raise SystemExit(f"python -m benchmarks.chfl_reference: {err}") from None
    start = time.perf_counter()
    pooled: dict[tuple[str, int], list[float]] = {}
    report["runs"] = [run_job(job, cfg, data[job.dataset], pooled) for job in plan(cfg)]
    report["seconds"] = time.perf_counter() - start
    report["mlp"] = mlp_section(mlp_header, mlp)
    report["summary"] = summarize(report)
    write_json(cfg.json_path, report)
    render(report, cfg)
    return 0


def render_only(cfg: Config) -> int:
    """Re-derive the tables of ``--json`` and rewrite its Markdown, saying when and at which commit; with
    ``--compare``, first replace its MLP runs by that file's and write the JSON back, stamped. Run nothing."""
    from benchmarks.chfl_reference_report import summarize

    report = read_result(cfg.json_path, "--render-only", "chfl_reference", {"runs": list, "mlp": dict})
    if cfg.compare is not None:  # new MLP runs (e.g. more splits merged into chfl.json) beside the same references
        report["mlp"] = mlp_section(*mlp_runs(cfg.compare, bool(report.get("quick"))))
        report["settings"]["compare"] = _shown(cfg.compare)
    report.update(summary=summarize(report), rendered=rendered_stamp())
    if cfg.compare is not None:
        write_json(cfg.json_path, report)
    render(report, cfg)
    return 0


def render(report: dict[str, Any], cfg: Config) -> None:
    from benchmarks.chfl_reference_report import to_markdown

    header = markdown_header("CHFL: reference learners on the same partitions", report) + rendered_line(report)
    write_text(cfg.markdown_path, to_markdown(report, header))
    wrote_json = not cfg.render_only or cfg.compare is not None
    print(f"wrote {cfg.markdown_path}" + (f" and {cfg.json_path}" if wrote_json else ""))


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.chfl_reference"))
