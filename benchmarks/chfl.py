"""Reproduce CHFL's Table II, Table III and Fig. 4 (Mori et al.) and time secure vs plain aggregation.

    python -m benchmarks.chfl [--quick] [--device cuda] [--data-dir DIR] --json FILE [--markdown FILE]
                              [--workers 2] [--rounds 20] [--splits 3] [--runs 2] [--lrs 3e-4,1e-3,3e-3]
                              [--merge] [--max-runs N]

One federated run per (dataset, clients, common ratio, feature split, run)
trains, against the same common column, the unique columns for every mu (0 and
the mu > 0 grid), the simple method's unique net and the Local baseline, so one
run gives every row of Table II (:mod:`securefl.algorithms.chfl`). Each run is
repeated for every learning rate of ``--lrs`` and each client keeps, per method,
the learning rate (with its round and mu) whose model scores best on its own
validation rows: the paper's "each client tunes hyperparameters such as learning
rate and mu using their own validation dataset"
(:func:`benchmarks.chfl_summary.tune_lr`). A run's number is the mean over its
clients of the chosen models' test accuracy; a cell is the mean ± sample std over runs
(feature splits x sample seeds). Jobs go to ``--workers`` processes with one
torch thread each; the secure and plain timing runs come after them, one after the
other in this process, so no other job shares the cores while they are timed
(:func:`benchmarks.chfl_jobs.run_planned`). Registered datasets whose files are missing are listed as
"not run here". ``--merge`` and ``--max-runs`` split the benchmark into chunks
(:mod:`benchmarks.chfl_merge`).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.chfl_jobs import plan, run_planned
from benchmarks.chfl_merge import chunk_record, load_previous, previous_chunks, todo
from benchmarks.chfl_summary import summarize
from benchmarks.common import (RESULTS_DIR, config_report, count_option, dataset_names, device_name, markdown_header,
                               read_result, rendered_line, rendered_stamp, run_main, writable, write_json, write_text)
from protocols.errors import InputError

DATASETS = ("covertype", "sensorless", "aloi", "helena", "jannis", "digits")
# ../shared/reference/README.md (paper Table II, III, V-B5): quoted for comparison, never measured here
PAPER_TABLE2 = {
    "covertype": (0.6218, 0.6407, 0.6744, 0.6843, 0.6637), "sensorless": (0.9762, 0.9526, 0.9855, 0.9863, None),
    "aloi": (0.7352, 0.7093, 0.7927, 0.7954, None), "helena": (0.2604, 0.2732, 0.2868, 0.2902, None),
    "jannis": (0.6449, 0.6341, 0.6551, 0.6572, 0.6528),
}
PAPER_TABLE3 = {2: (0.6420, 0.7649, 0.7475, 0.7748), 5: (0.6218, 0.6407, 0.6744, 0.6843),
                10: (0.6014, 0.5628, 0.6290, 0.6291)}
TOLERANCE = 0.02
FIXED_SETTINGS: dict[str, Any] = {  # the paper's settings that no flag changes, recorded in every result
    "n_clients_table2": 5, "common_ratio": 0.3, "local_epochs": 5, "batch_size": 64, "hidden": [512, 256, 128],
    "optimizer": "Adam (state kept on each client across rounds)", "test_rows": "divided evenly over clients",
    "scaling": "each client standardises on its own training rows; 0/1 indicator columns kept",
    "selection": "per client on its validation rows: learning rate, round (and mu for CHFL mu>0)",
    "aggregation": "Bonawitz secure aggregation, unweighted mean"}


@dataclass(frozen=True)
class Config:
    datasets: tuple[str, ...]
    rounds: int
    splits: int
    runs: int
    sweep_splits: int
    clients: tuple[int, ...]
    ratios: tuple[float, ...]
    mus: tuple[float, ...]
    lrs: tuple[float, ...]
    timing_rounds: int
    workers: int
    device: str
    quick: bool
    json_path: Path
    markdown_path: Path
    data_dir: str | None
    render_only: bool = False
    merge: bool = False
    max_runs: int | None = None


def parse_args(argv: Sequence[str] | None) -> Config:
    p = argparse.ArgumentParser(prog="python -m benchmarks.chfl", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="digits only, 1 split x 1 run, 4 rounds, 2 clients for Table III (labelled quick)")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--rounds", type=count_option, default=20, help="communication rounds T (5 local epochs each)")
    p.add_argument("--splits", type=count_option, default=3, help="random feature splits for Table II")
    p.add_argument("--runs", type=count_option, default=2, help="sample seeds per feature split for Table II")
    p.add_argument("--sweep-splits", type=count_option, default=2,
                   help="feature splits (1 run each) per point of Table III and Fig. 4")
    p.add_argument("--clients", default="2,5,10", help="Table III client counts (covertype)")
    p.add_argument("--ratios", default="0.1,0.2,0.3,0.4,0.5", help="Fig. 4 common-feature ratios (covertype)")
    p.add_argument("--mus", default="0.1,0.25,0.5,1.0", help="the mu > 0 grid each client chooses from")
    p.add_argument("--lrs", default="0.0003,0.001,0.003",
                   help="Adam learning rates; each client picks its own on its validation rows (one run per lr)")
    p.add_argument("--timing-rounds", type=count_option, default=3, help="rounds of the secure-vs-plain timing runs")
    p.add_argument("--workers", type=count_option, default=2, help="processes running jobs (one torch thread each)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None,
                   help="default benchmarks/results/chfl.json (chfl.quick.json with --quick, so a quick run "
                        "never replaces the full results)")
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--render-only", action="store_true",
                   help="rewrite the Markdown and PNG from an existing --json file without running anything")
    p.add_argument("--merge", action="store_true",
                   help="keep the runs in --json (same settings but the plan's size: --splits, --clients, ...);"
                        " run only the planned ones it lacks")
    p.add_argument("--max-runs", type=count_option, default=None,
                   help="run at most this many runs now (a run: one job at every lr; the secure and plain"
                        " timing jobs are one run), for chunks with --merge")
    a = p.parse_args(argv)
    a.json = a.json or RESULTS_DIR / ("chfl.quick.json" if a.quick else "chfl.json")
    datasets = ("digits",) if a.quick else dataset_names(p, a.datasets, DATASETS)
    device_name(p, a.device)
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown, beside={"the PNG beside --markdown": a.markdown.with_suffix(".png")})
    if min(a.rounds, a.splits, a.runs, a.sweep_splits, a.workers, a.timing_rounds) < 1:
        p.error("--rounds, --splits, --runs, --sweep-splits, --timing-rounds and --workers must be >= 1")
    if a.max_runs is not None and a.max_runs < 1:
        p.error(f"--max-runs must be >= 1, got {a.max_runs}")
    lrs = _numbers(p, "--lrs", a.lrs, "positive numbers", lambda v: v > 0)
    mus = _numbers(p, "--mus", a.mus, "numbers in (0, 1]", lambda v: 0 < v <= 1)
    ratios = _numbers(p, "--ratios", a.ratios, "numbers in (0, 1)", lambda v: 0 < v < 1)
    clients = _numbers(p, "--clients", a.clients, "integers >= 2", lambda v: v >= 2 and v == int(v))
    quick = a.quick
    return Config(datasets=datasets, rounds=4 if quick else a.rounds, splits=1 if quick else a.splits,
                  runs=1 if quick else a.runs, sweep_splits=1 if quick else a.sweep_splits,
                  clients=(2, 5) if quick else tuple(int(c) for c in clients),
                  ratios=(0.3,) if quick else ratios, mus=mus, lrs=lrs,
                  timing_rounds=2 if quick else a.timing_rounds,
                  workers=a.workers, device=a.device, quick=quick, json_path=a.json,
                  markdown_path=a.markdown, data_dir=a.data_dir,
                  render_only=a.render_only, merge=a.merge, max_runs=a.max_runs)


def _numbers(parser: argparse.ArgumentParser, flag: str, text: str, what: str,
             valid: Callable[[float], bool]) -> tuple[float, ...]:
    """A comma-separated list of distinct ``valid`` numbers, sorted, or a parser error naming ``flag``."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and valid(v) for v in values) or len(set(values)) != len(values):
        parser.error(f"{flag} must list distinct {what}, separated by commas; got {text!r}")
    return tuple(sorted(values))


def available(cfg: Config) -> tuple[list[str], dict[str, str]]:
    """The datasets that can run here, and why each other one cannot.

    Datasets registered as absent from ../shared/data (sensorless, aloi, ...) are
    reported "not run here" when their files are missing. One that should be there
    (covertype) stops the benchmark instead (InputError): a missing or mistyped data
    folder must not quietly turn into a report without it.
    """
    from securefl.data.registry import data_dir, get_dataset

    ok, missing = [], {}
    for name in cfg.datasets:
        entry = get_dataset(name)
        try:
            root = data_dir(cfg.data_dir, dataset=name) if entry.files else None
        except InputError as exc:  # no data folder: report the dataset as not run, do not stop
            if entry.available:
                raise
            missing[name] = str(exc)
            continue
        absent = [f.path for f in entry.files if not (root / f.path).is_file()]
        if absent and entry.available:
            raise InputError(f"dataset {name!r}: {', '.join(absent)} not found under {root} "
                             "(point --data-dir or SECUREFL_DATA at the data folder, or leave it out of --datasets)")
        if absent:
            missing[name] = f"not run here (files not available: {', '.join(absent)})"
        else:
            ok.append(name)
    return ok, missing


def render(report: dict[str, Any], cfg: Config) -> None:
    """Write the Markdown report (and the Fig. 4 PNG) of ``report``."""
    from benchmarks.chfl_report import plot_fig4, to_markdown

    png = plot_fig4(report, cfg.markdown_path.with_suffix(".png"))
    header = markdown_header("CHFL: Table II, Table III, Fig. 4", report) + rendered_line(report)
    write_text(cfg.markdown_path, to_markdown(report, header, png=png, data_dir=cfg.data_dir))
    print(f"wrote {cfg.markdown_path}" + (f" and {png}" if png else ""))


def render_only(cfg: Config) -> int:
    """Re-derive the tables of ``--json`` from its stored runs (so a fixed summary reaches older
    files), write them back with when and at which commit, and rewrite the Markdown; run nothing."""
    report = read_result(cfg.json_path, "--render-only", "chfl", {"runs": list, "summary": dict})
    try:
        summary = summarize(report["runs"])
    except (KeyError, TypeError, ValueError) as err:
        raise SystemExit(f"python -m benchmarks.chfl: --render-only: {cfg.json_path}: a stored run lacks {err}"
                         ) from None
    report.update(summary=summary, rendered=rendered_stamp())
    write_json(cfg.json_path, report)
    render(report, cfg)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    if cfg.render_only:
        return render_only(cfg)
    report = config_report("chfl", cfg, argv, paths=("json_path", "markdown_path", "data_dir", "merge", "max_runs"),
                           extra=FIXED_SETTINGS)
    settings = report["settings"]
    try:
        names, missing = available(cfg)
    except InputError as err:
        raise SystemExit(f"python -m benchmarks.chfl: {err}") from None
    jobs = plan(cfg, names)
    old = load_previous(cfg.json_path, settings, jobs) if cfg.merge else None
    kept = old["runs"] if old else []
    start = time.perf_counter()
    ran = run_planned(todo(jobs, kept, cfg.max_runs), cfg)
    chunks = [*(previous_chunks(old) if old else []), chunk_record(report, len(ran), time.perf_counter() - start)]
    report.update(runs=[*kept, *ran], chunks=chunks, seconds=sum(c["seconds"] for c in chunks))
    report["missing_jobs"] = len(todo(jobs, report["runs"], None))
    report["not_run"] = missing
    report["summary"] = summarize(report["runs"])
    write_json(cfg.json_path, report)
    render(report, cfg)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.chfl"))
