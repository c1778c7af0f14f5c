"""Reproduce GL's Table 2 (Obeidi): AUROC, (balanced) accuracy and AUPRC per client over seeds.

    python -m benchmarks.gl [--quick] [--device cuda] [--datasets gl_covertype,gl_heart]
                            [--cover-seeds N] [--heart-seeds N] [--workers 2] --json FILE [--markdown FILE] [--merge]
                            [--bn-stats averaged|local] [--final average|local] [--batches N]
                            [--select last|val_loss|val_auroc]
                            [--reuse FILE] [--restart] [--render-only]

Runs GL, FedAvg (padded) and Local on both experiments and Centralized on covertype,
each seed of the paper's list (covertype 8-28, heart 0-100; the first N when fewer
are asked for), with the paper's settings (covertype 105 epochs x 10 batches; heart
10 epochs x 15 batches, Table 12; ``--batches 5`` is the authors' launch command),
every average through secure aggregation. Compares with the authors' released per-seed
results, and times one aggregation round of the GL and FedAvg vectors with secure vs
plain averaging.
Comanche and Rawah are evaluated on their validation files (test files missing);
Centralized on the pooled validation file (pooled test file missing).

``--merge`` keeps the seeds already in the JSON file (same settings required), runs only
the missing ones and keeps the other datasets, so a long covertype sweep can be run in
chunks: each dataset lists the date, commit and machine load of every chunk (``runs_from``).
``--merge --restart`` starts the named datasets over (after a settings change) and keeps
the others; ``--render-only`` rebuilds the tables from the stored runs.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from baselines.gl_baselines import run_gl_method
from benchmarks.common import (count_option, dataset_names, device_name, named_report, rendered_stamp, run_main,
                               writable, write_json, write_text)
from benchmarks.gl_merge import (METHODS, StoredRuns, check_previous, complete_seeds, load_result, preflight,
                                reused_runs, upgrade)
from benchmarks.gl_report import (PAPER_PARAMETERS, best_method_check, collect, global_class_table, load_reference,
                                  render, table2)
from benchmarks.pool import map_jobs
from protocols.channels import SecAggConfig
from protocols.errors import SecureFLError
from protocols.transport import run_parties
from securefl.algorithms.gl import SWITCHES, GLConfig, build_model, paper_config, switch_default, switches
from securefl.algorithms.gl_select import SELECT
from securefl.data.gl_sets import encode_client
from securefl.data.registry import load_registered
from securefl.models.tabular import count
from securefl.runtime import GPUPeak
from securefl.runtime.federated import averaging_server, client_average

PAPER_SEEDS = {"gl_covertype": tuple(range(8, 29)), "gl_heart": tuple(range(0, 101))}
DEFAULT_SEEDS = {"gl_covertype": 1, "gl_heart": 101}
"""What fits a ~40 min budget on 2 CPU cores: a covertype seed costs ~30 CPU-minutes for its four
methods (105 epochs of a 0.9M-parameter model on 11,340 rows, plus 62k evaluation rows), a heart
seed ~50 CPU-seconds at 15 batches an epoch. Ask for more with --cover-seeds / --heart-seeds (or run on a GPU)."""
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "gl"


def dataset_config(name: str, *, quick: bool, device: str, bn_stats: str | None = None,
                   final: str | None = None, batches: int | None = None, select: str = "last") -> GLConfig:
    """The paper's settings (quick: 2 epochs and a 2-block transformer on covertype); ``bn_stats``
    "local" keeps batch-norm running statistics with each client (``GLConfig.federate_bn_stats``);
    ``final`` "local" evaluates each client's own last-round weights and "average" the last round's
    average (``GLConfig.final_average``); None keeps GLConfig's default. ``batches`` replaces the
    batches per local epoch (heart: 15 as in the paper's Table 12, 5 as the authors launched it).
    ``select``: the epoch each client is evaluated with (``GLConfig.select``)."""
    overrides = {"select": select, **({} if batches is None else {"batches": batches})}
    config = paper_config(name, device=device, threads=1, **switches(bn_stats=bn_stats, final=final), **overrides)
    if quick and name == "gl_covertype":
        config = replace(config, epochs=2, shape=replace(config.shape, blocks=2))
    return config


def run_job(name: str, method: str, seed: int, config: GLConfig, data_dir: str | None) -> dict[str, Any]:
    """One (dataset, method, seed) run in a worker process."""
    torch.set_num_threads(1)
    dataset = load_registered(name, kind="gl", data_dir=data_dir)
    with GPUPeak(config.device) as peak:
        result = run_gl_method(method, dataset, replace(config, seed=seed))
    return peak.into(result)


def _timing_client(transport, *, vector: np.ndarray, rounds: int, config: SecAggConfig) -> None:
    tensors = [torch.from_numpy(vector.copy())]
    for r in range(rounds):
        client_average(transport, server="server", tensors=tensors, config=config, round=r)


def aggregation_seconds(n_values: int, n_clients: int, *, secure: bool, rounds: int) -> float:
    """Mean wall seconds of one averaging round of ``n_values`` floats over ``n_clients`` clients."""
    config = SecAggConfig(secure=secure, stage_timeout=600.0)
    clients = [f"c{i}" for i in range(n_clients)]
    rng = np.random.default_rng(0)
    kwargs = {"server": {"clients": clients, "rounds": rounds, "config": config},
              **{c: {"vector": rng.normal(size=n_values).astype(np.float32), "rounds": rounds, "config": config}
                 for c in clients}}
    run = run_parties({"server": averaging_server, **{c: _timing_client for c in clients}}, kwargs=kwargs)
    return float(np.mean(run.results["server"]["round_seconds"]))


def parameter_counts(name: str, config: GLConfig, data_dir: str | None) -> dict[str, Any]:
    """Our model's total / federated parameter counts per client, next to the paper's (Tables 8, 9)."""
    tables = load_registered(name, kind="gl", data_dir=data_dir).split(0)
    ours = {}
    for t in tables:
        model = build_model(encode_client(t), config)
        ours[t.name] = {"total": count(list(model.parameters())), "federated_gl": count(model.global_parameters())}
    return {"ours": ours, "paper": PAPER_PARAMETERS[name]}


def run_jobs(name: str, seeds: Sequence[int], config: GLConfig, args: argparse.Namespace,
             skip: frozenset[tuple[str, int]] = frozenset()) -> list[dict[str, Any]]:
    """Every method of ``name`` for each of ``seeds`` but the (method, seed) pairs in ``skip``, over workers."""
    jobs = [(name, m, s, config, args.data_dir) for s in seeds for m in METHODS[name] if (m, s) not in skip]
    if not jobs:
        return []
    def show(r: dict[str, Any], done: int, total: int) -> None:
        print(f"  {name} {r['method']} seed {r['seed']}: {r['seconds']:.0f} s ({done}/{total})", flush=True)

    return map_jobs(run_job, jobs, workers=args.workers, device=args.device, on_done=show)


def summarise(name: str, runs: list[dict[str, Any]], config: GLConfig, args: argparse.Namespace) -> dict[str, Any]:
    """Table 2 against the authors' results, parameter counts and secure-vs-plain aggregation timing."""
    params = parameter_counts(name, config, args.data_dir)
    n_clients, rounds = len(params["ours"]), 2 if args.quick else 3
    def sent(method: str) -> int:  # the values a client averages: parameters and batch-norm statistics
        run = next(r for r in runs if r["method"] == method)
        return next(iter(run["metrics"]["clients"].values()))["federated_parameters"]

    sizes = {"gl (global layers)": sent("gl"), "fedavg (whole model)": sent("fedavg")}
    timing = {kind: {"values": n, **{mode: aggregation_seconds(n, n_clients, secure=mode == "secure", rounds=rounds)
                                     for mode in ("secure", "plain")}} for kind, n in sizes.items()}
    return rederive(name, {
        "settings": config.settings(), "seeds": sorted({r["seed"] for r in runs}), "methods": list(METHODS[name]),
        "parameters": params, "aggregation_round_seconds": timing,
        "run_seconds": {m: float(np.mean([r["seconds"] for r in runs if r["method"] == m])) for m in METHODS[name]},
        **gpu_peaks(runs, METHODS[name]),
        "runs": runs}, args.reference)


def gpu_peaks(runs: list[dict[str, Any]], methods: Sequence[str]) -> dict[str, Any]:
    """``{"gpu_peak_mib": {method: MiB}}``, the most GPU memory one run of each method took; {} on CPU."""
    peaks = {m: max(r["gpu_peak_mib"] for r in runs if r["method"] == m and "gpu_peak_mib" in r)
             for m in methods if any(r["method"] == m and "gpu_peak_mib" in r for r in runs)}
    return {"gpu_peak_mib": peaks} if peaks else {}


def run_dataset(name: str, seeds: Sequence[int], args: argparse.Namespace, run_meta: dict[str, Any],
                previous: dict[str, Any] | None = None, reuse: StoredRuns | None = None) -> dict[str, Any]:
    """Every method and seed of one experiment; with ``previous`` (``--merge``) only the seeds it lacks,
    with ``reuse`` (``--reuse``, read) without rerunning its Local and Centralized runs."""
    config = dataset_config(name, quick=args.quick, device=args.device, bn_stats=args.bn_stats, final=args.final,
                            batches=args.batches, select=args.select)
    done: set[int] = set()
    provenance: list[dict[str, Any]] = []
    if previous is not None:
        check_previous(name, previous, config, args.json)
        done = complete_seeds(previous["runs"], name)  # every stored seed stays, asked for this time or not
        provenance = previous["runs_from"]
    prior = [r for r in previous["runs"] if r["seed"] in done] if previous is not None else []
    fresh = [s for s in seeds if s not in done]
    reused, reused_from = reused_runs(name, fresh, config, reuse) if reuse is not None and fresh else ([], [])
    start = time.perf_counter()
    runs = reused + run_jobs(name, fresh, config, args, frozenset((r["method"], r["seed"]) for r in reused))
    seconds = time.perf_counter() - start
    if fresh:
        ran = [m for m in METHODS[name] if any(r["method"] == m and "reused_from" not in r for r in runs)]
        provenance = [*provenance, *reused_from, {**run_meta, "seeds": fresh, "seconds": seconds, "methods": ran}]
    return {**summarise(name, prior + runs, config, args), "runs_from": provenance}


def rederive(name: str, res: dict[str, Any], reference: Path) -> dict[str, Any]:
    """``res`` with Table 2 and the best-method check computed again from its runs (nothing runs)."""
    authors = load_reference(reference, name)
    markdown, records = table2(name, collect(res["runs"]), authors)
    markdown += global_class_table(res["runs"], authors)
    return {**res, "table2": records, "best_auroc": best_method_check(records), "markdown": markdown}


def render_only(args: argparse.Namespace) -> int:
    """Rewrite --json's derived tables and --markdown from its runs, noting when and at which commit."""
    old = load_result(args.json, "--render-only")
    results = {name: rederive(name, res, args.reference) for name, res in upgrade(old).items()}
    meta = {k: v for k, v in old.items() if k != "datasets"}
    meta["rendered"] = rendered_stamp()
    write_json(args.json, {**meta, "datasets": {k: {kk: vv for kk, vv in v.items() if kk != "markdown"}
                                                 for k, v in results.items()}})
    write_text(args.markdown, render(meta, results))
    print(f"rewrote {args.markdown} and the tables of {args.json} from {sum(len(r['runs']) for r in results.values())}"
          " runs", flush=True)
    return 0


def seed_count(name: str, args: argparse.Namespace) -> int:
    """Seeds to run: as asked, else 1 covertype / 2 heart when quick, else :data:`DEFAULT_SEEDS`."""
    asked = {"gl_covertype": args.cover_seeds, "gl_heart": args.heart_seeds}[name]
    if asked:
        return asked
    return (1 if name == "gl_covertype" else 2) if args.quick else DEFAULT_SEEDS[name]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.gl``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gl", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 covertype seed (2 epochs, 2 blocks), 2 heart seeds")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--datasets", default="gl_covertype,gl_heart")
    parser.add_argument("--cover-seeds", type=count_option, default=None,
                        help=f"first N of 8..28 (default {DEFAULT_SEEDS['gl_covertype']})")
    parser.add_argument("--heart-seeds", type=count_option, default=None, help="first N of 0..100 (default 101)")
    parser.add_argument("--workers", type=count_option, default=2, help="worker processes over (method, seed) runs")
    parser.add_argument("--data-dir", default=os.environ.get("SECUREFL_DATA"))
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--markdown", type=Path, default=None, help="default: --json with .md")
    parser.add_argument("--merge", action="store_true",
                        help="keep the seeds already in --json and run only the missing ones (same settings)")
    parser.add_argument("--bn-stats", choices=SWITCHES["bn_stats"][1:], default=None,
                        help="batch-norm running statistics of federated layers: averaged with them or kept by "
                             f"each client (default {switch_default('bn_stats')}; GLConfig.federate_bn_stats)")
    parser.add_argument("--restart", action="store_true",
                        help="with --merge: the datasets named in --datasets start over (their stored runs are "
                             "dropped, e.g. after a settings change); the others are kept")
    parser.add_argument("--final", choices=SWITCHES["final"][1:], default=None,
                        help="what clients are evaluated with: their own last-round weights (local; Algorithm 1 "
                             "as written) or the last round's average (results before 2026-11-22) (default "
                             f"{switch_default('final')}; GLConfig.final_average)")
    parser.add_argument("--batches", type=count_option, default=None,
                        help="batches per local epoch for every dataset run (default: the paper's schedule, "
                             "covertype 10, heart 15 as Table 12 says; the authors launched heart with 5)")
    parser.add_argument("--select", choices=SELECT, default="last",
                        help="the epoch each client is evaluated with: its last (default, as the paper writes) or "
                             "the one its validation rows score best by loss or AUROC (GLConfig.select; heart only)")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="take the Local and Centralized runs (which federate nothing) of the asked seeds from "
                             "this result file instead of rerunning them, e.g. for a --bn-stats local sweep")
    parser.add_argument("--render-only", action="store_true",
                        help="recompute Table 2 from the runs in --json and rewrite it and --markdown; run nothing")
    return parser


def _checked_datasets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The datasets asked for, once every option is checked against them and their files are found."""
    names = dataset_names(parser, args.datasets, PAPER_SEEDS)
    for flag, asked, name in (("--cover-seeds", args.cover_seeds, "gl_covertype"),
                              ("--heart-seeds", args.heart_seeds, "gl_heart")):
        if asked is not None and not 1 <= asked <= len(PAPER_SEEDS[name]):
            parser.error(f"{flag} must be 1..{len(PAPER_SEEDS[name])} (the paper's seeds), got {asked}")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if args.batches is not None and args.batches < 1:
        parser.error(f"--batches must be at least 1, got {args.batches}")
    if args.select != "last" and "gl_covertype" in names:
        parser.error(f"--select {args.select}: gl_covertype's clients come as fixed files without validation rows"
                     " (Comanche's and Rawah's are their test rows here); run it with --datasets gl_heart")
    for name in names:  # a missing file stops the benchmark before any worker starts
        try:
            load_registered(name, kind="gl", data_dir=args.data_dir)
        except SecureFLError as err:
            parser.error(str(err))
    if args.restart and not args.merge:
        parser.error("--restart needs --merge (without --merge every dataset starts over anyway)")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    device_name(parser, args.device)
    args.markdown = args.markdown or args.json.with_suffix(".md")
    writable(parser, inputs={"reuse": args.reuse}, json=args.json, markdown=args.markdown)
    if args.render_only:
        return render_only(args)
    names = _checked_datasets(parser, args)
    old = load_result(args.json, "--merge") if args.merge else None
    if old is not None and old.get("quick") != args.quick:
        parser.error("--merge: cannot mix a --quick result with a full one")
    previous = upgrade(old) if old is not None else {}
    plans = {name: (dataset_config(name, quick=args.quick, device=args.device, bn_stats=args.bn_stats,
                                   final=args.final, batches=args.batches, select=args.select),
                    PAPER_SEEDS[name][:seed_count(name, args)]) for name in names}
    reuse = StoredRuns.read(args.reuse) if args.reuse is not None else None
    preflight(plans, previous, json_path=args.json, reuse=reuse, restart=args.restart)
    meta = named_report("gl", settings={"datasets": names, "workers": args.workers}, quick=args.quick,
                        argv=argv, device=args.device)
    run_meta = {k: meta[k] for k in ("date", "commit", "device", "command")}
    results = {}
    for name in PAPER_SEEDS:
        if name in names:
            seeds = PAPER_SEEDS[name][:seed_count(name, args)]
            results[name] = run_dataset(name, seeds, args, run_meta, None if args.restart else previous.get(name),
                                        reuse)
            print(f"{name}: {len(results[name]['runs'])} runs", flush=True)
        elif name in previous:
            results[name] = rederive(name, previous[name], args.reference)
    meta["settings"]["seeds"] = {k: v["seeds"] for k, v in results.items()}
    write_json(args.json, {**meta, "datasets": {k: {kk: vv for kk, vv in v.items() if kk != "markdown"}
                                                 for k, v in results.items()}})
    write_text(args.markdown, render(meta, results))
    print(render(meta, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.gl"))
