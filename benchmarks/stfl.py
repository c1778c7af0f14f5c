"""Reproduce the STFL paper's Table I (accuracy) and Table III (training time).

    python -m benchmarks.stfl [--quick] [--device cuda] [--datasets breast,default_credit,give_credit]
                              [--seeds 5] [--epochs 100] [--workers 1] [--rows ROWS] [--resume]
                              [--[no-]cuda-graphs] --json FILE [--markdown FILE]
                              [--merge] [--render-only]

``--merge`` adds the datasets run now to an existing result file (replacing
those of the same name); each dataset keeps the date, commit, command and host of
the run that produced it. ``--render-only`` rewrites the Markdown from ``--json``
without running anything.

Every method runs on the same per-seed split (40% self-taught, 40% train, 20%
test). HE-VFL runs through the real protocol (Paillier and CKKS). Where a full
HE-VFL run would take more than ``--ckks-max-steps`` / ``--paillier-max-steps``
training steps, its accuracy
comes from the plaintext split NN with the identical structure, initialisation
and batch order (the tests show the protocol trains to the same weights, within
fixed-point / CKKS error), and its time is measured on ``--he-timed-steps`` steps
through the protocol and extrapolated; both are labelled as such in the output.

``--workers N`` runs the (seed, method) cells on N processes at once: for a
machine with many cores, such as a GPU host. Cells that share the machine slow
each other, so their seconds are an upper bound on a cell run alone; the result
records the worker count. ``--rows`` runs only the named Table I rows.

Each finished cell is kept in ``<json>.cells.jsonl`` as it ends
(:mod:`benchmarks.checkpoint`); after a stop, ``--resume`` keeps those cells and
runs the rest.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from benchmarks import stfl_cells, stfl_merge
from benchmarks.checkpoint import CellLog, checkpoint_path
from benchmarks.stfl_cells import load_datasets, resumed, run_datasets, summarize
from benchmarks.common import (RESULTS_DIR, config_report, count_option, dataset_names, device_name, markdown_header,
                               read_result, rendered_line, rendered_stamp, run_main, uncommitted_code, writable,
                               write_json, write_text)
from benchmarks.probe import seal_rotation_ms
from benchmarks.stfl_gpu import gpu_beside

DATASETS = ("breast", "default_credit", "give_credit")
PAPER_NAMES = {"breast": "cancer", "default_credit": "payment", "give_credit": "credit"}
# The paper's Table I and III (../shared/reference/README.md): quoted for comparison, never measured here.
PAPER_ACCURACY = {
    "centralized": (91.15, 81.10, 93.16), "centralized (all data)": (92.92, 81.32, 93.39),
    "hierarchical": (92.92, 78.20, 93.54), "hierarchical (all data)": (92.92, 78.20, 93.54),
    "he-vfl": (92.04, 74.87, 93.44), "he-vfl (all data)": (95.58, 74.85, 93.24),
    "stfl": (92.92, 78.50, 93.41),
}
PAPER_SECONDS = {"he-vfl": (1737.0, 137957.0, 191109.0), "stfl": (88.0, 941.0, 7723.0)}
ACCURACY_TOLERANCE = 1.5  # points: the target for STFL


@dataclass(frozen=True)
class Config:
    datasets: tuple[str, ...]
    seeds: int
    epochs: int
    device: str
    quick: bool
    he_backends: tuple[str, ...]
    ckks_max_steps: int
    paillier_max_steps: int
    he_timed_steps: int
    json_path: Path
    markdown_path: Path
    data_dir: Path | None
    merge: bool = False
    render_only: bool = False
    gpu_json: Path | None = None
    workers: int = 1
    rows: tuple[str, ...] | None = None
    cuda_graphs: bool = False
    resume: bool = False


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.stfl", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="breast only, 2 seeds, 10 epochs (labelled quick)")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--seeds", type=count_option, default=5)
    p.add_argument("--epochs", type=count_option, default=100)
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--he", default="paillier,ckks", help="HE-VFL backends")
    p.add_argument("--ckks-max-steps", type=count_option, default=250,
                   help="run CKKS HE-VFL fully through the protocol up to this many training steps")
    p.add_argument("--paillier-max-steps", type=count_option, default=0,
                   help="same for Paillier (about 5 s a step here, so extrapolated by default)")
    p.add_argument("--he-timed-steps", type=count_option, default=5, help="steps timed when extrapolating")
    p.add_argument("--resume", action="store_true",
                   help="keep the finished cells of a stopped run with the same settings and commit "
                        "(kept in <json>.cells.jsonl as each ends) and run only the others")
    p.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="on --device cuda, train STFL and the plaintext baselines as CUDA graph replays "
                        "(default on --device cuda; --no-cuda-graphs runs the eager loop)")
    p.add_argument("--rows", default=None,
                   help="only these Table I rows, comma-separated (e.g. 'stfl,he-vfl ckks'); default every row")
    p.add_argument("--workers", type=count_option, default=1,
                   help="processes running (seed, method) cells at once; above 1 the cells share the machine")
    p.add_argument("--json", type=Path, default=None,
                   help="default benchmarks/results/stfl.json (stfl.quick.json with --quick, so a quick run "
                        "never replaces the full results)")
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--merge", action="store_true",
                   help="add these datasets to the existing --json file instead of replacing it")
    p.add_argument("--render-only", action="store_true",
                   help="rewrite the Markdown from an existing --json file without running anything")
    p.add_argument("--gpu-json", type=Path, default=None,
                   help="a --device cuda result of this benchmark: Table III shows its seconds and GPU memory "
                        "beside; recorded in --json, so later --merge and --render-only runs keep showing it")
    return p


def parse_args(argv: Sequence[str] | None) -> Config:
    p = _parser()
    a = p.parse_args(argv)
    a.json = a.json or RESULTS_DIR / ("stfl.quick.json" if a.quick else "stfl.json")
    datasets = ("breast",) if a.quick else dataset_names(p, a.datasets, DATASETS)
    device_name(p, a.device)
    a.markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=a.markdown, inputs={"gpu_json": a.gpu_json})
    if min(a.seeds, a.epochs, a.workers) < 1:
        p.error("--seeds, --epochs and --workers must be at least 1")
    if min(a.ckks_max_steps, a.paillier_max_steps) < 0:
        p.error("--ckks-max-steps and --paillier-max-steps must be at least 0")
    if a.he_timed_steps < 2:  # the first timed step is counted once, the others' mean for every later step
        p.error(f"--he-timed-steps must be at least 2, got {a.he_timed_steps}")
    unknown = [b for b in a.he.split(",") if b not in ("paillier", "ckks")]
    if unknown:
        p.error(f"--he: unknown backend {unknown[0]!r}; choose from paillier, ckks (comma-separated)")
    cfg = Config(datasets=datasets, seeds=2 if a.quick else a.seeds, epochs=10 if a.quick else a.epochs,
                 device=a.device, quick=a.quick, he_backends=tuple(a.he.split(",")),
                 ckks_max_steps=a.ckks_max_steps, paillier_max_steps=a.paillier_max_steps,
                 he_timed_steps=a.he_timed_steps, json_path=a.json,
                 markdown_path=a.markdown, data_dir=a.data_dir,
                 merge=a.merge, render_only=a.render_only, gpu_json=a.gpu_json, workers=a.workers,
                 cuda_graphs=a.device.startswith("cuda") if a.cuda_graphs is None else a.cuda_graphs,
                 resume=a.resume)
    return cfg if a.rows is None else replace(cfg, rows=_chosen_rows(p, a.rows, cfg))


def _chosen_rows(p: argparse.ArgumentParser, text: str, cfg: Config) -> tuple[str, ...]:
    """``--rows``: Table I row names; a usage error names the first unknown one and the choices."""
    rows, known = tuple(r.strip() for r in text.split(",")), [name for name, _, _ in stfl_cells.methods(cfg)]
    unknown = [r for r in rows if r not in known]
    if unknown:
        p.error(f"--rows: unknown row {unknown[0]!r}; with these --he backends choose from {', '.join(known)}")
    return rows


def paper_accuracy(row: str, dataset: str) -> float | None:
    key = row.replace(" paillier", "").replace(" ckks", "").replace(" (means)", "")
    values = PAPER_ACCURACY.get(key)
    return values[DATASETS.index(dataset)] if values else None


def merge_reports(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the datasets and rows of ``old`` it did not rerun (:mod:`benchmarks.stfl_merge`)."""
    return stfl_merge.merge_reports(old, new, summarize, list(DATASETS))


def previous_report(cfg: Config) -> dict[str, Any]:
    """The ``--json`` file that ``--merge`` will extend; SystemExit if it cannot be extended."""
    old = stfl_merge.name_stfl_rows(read_result(cfg.json_path, "--merge", "stfl", {"datasets": list}))
    if old.get("quick") != cfg.quick:
        raise SystemExit("--merge: cannot mix a --quick result with a full one")
    why = stfl_merge.check_mergeable(old, cfg.datasets, [name for name, _, _ in stfl_cells.methods(cfg)], cfg.seeds,
                                     cfg.epochs, cfg.device)
    if why:
        raise SystemExit(why)
    return old


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    if cfg.render_only:
        return render_stored(cfg)
    old = previous_report(cfg) if cfg.merge else None  # checked before hours of runs, not after
    cfg, beside = gpu_beside(cfg, old)  # checked before any run
    datasets = load_datasets(cfg)
    report = config_report("stfl", cfg, argv, paths=("json_path", "markdown_path", "data_dir", "merge",
                                                     "render_only", "gpu_json", "resume"),
                           extra={"latent": dict(stfl_merge.STFL_ROWS)})  # what each STFL row's passive parties send
    settings = report["settings"]
    report["seal_rotation_ms"] = round(seal_rotation_ms(), 3)
    run_meta = {k: report[k] for k in ("date", "commit", "quick", "device", "settings", "command",
                                       "seal_rotation_ms")}
    key = {"benchmark": "stfl", "commit": report["commit"], "uncommitted": uncommitted_code(), "device": cfg.device,
           "settings": {k: v for k, v in settings.items() if k != "workers"}}  # cells do not depend on workers
    log = CellLog.open(checkpoint_path(cfg.json_path), key, resume=cfg.resume)
    if log.done:
        print(f"--resume: {len(log.done)} finished cells kept from {log.path}", flush=True)
        report["resumed_cells"] = len(log.done)
    try:
        report["datasets"] = [{**d, "run": run_meta, "stfl_rows": stfl_merge.NAMED, **resumed(log, d["dataset"])}
                              for d in run_datasets(datasets, cfg, log)]
    except BaseException:
        print(f"benchmarks.stfl: the finished cells are kept in {log.path}; the same command with --resume"
              " runs only the others", file=sys.stderr)
        raise
    if old is not None:
        report = merge_reports(old, report)
    if cfg.gpu_json is not None:
        report["gpu_json"] = str(cfg.gpu_json)
    write_json(cfg.json_path, report)
    log.remove()
    print(f"wrote {cfg.json_path}")
    render(report, cfg, beside)
    return 0


def render_stored(cfg: Config) -> int:
    """``--render-only``: the Markdown of the stored ``--json`` file, beside a GPU run of the stored
    table's ``--quick`` and epochs (not the command line's, which render-only does not run)."""
    stored = stfl_merge.name_stfl_rows(read_result(cfg.json_path, "--render-only", "stfl", {"datasets": list}))
    cfg = replace(cfg, quick=bool(stored.get("quick")), epochs=(stored.get("settings") or {}).get("epochs", cfg.epochs))
    cfg, beside = gpu_beside(cfg, stored)
    if cfg.gpu_json is not None and stored.get("gpu_json") != str(cfg.gpu_json):
        write_json(cfg.json_path, {**stored, "gpu_json": str(cfg.gpu_json)})
    render({**stored, "rendered": rendered_stamp()}, cfg, beside)
    return 0


def render(report: dict[str, Any], cfg: Config, beside: dict[str, Any] | None = None) -> None:
    """Write the Markdown tables of ``report``, with ``beside`` (the GPU run) in Table III."""
    from benchmarks.stfl_report import to_markdown

    header = markdown_header("STFL: Table I and Table III", report) + rendered_line(report)
    write_text(cfg.markdown_path, to_markdown(report, header, beside, str(cfg.gpu_json or "")))
    print(f"wrote {cfg.markdown_path}")


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.stfl"))
