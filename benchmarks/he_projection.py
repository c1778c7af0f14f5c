"""Check the HE-VFL cells that ``benchmarks.stfl`` extrapolates against a run measured in full.

    python -m benchmarks.he_projection [--quick] [--dataset default_credit] [--seed 0] [--he ckks]
                                       [--epochs 100] [--timed-steps 5] --json FILE [--markdown FILE]

``benchmarks.stfl`` cannot run HE-VFL on payment or credit in full on a 2-core machine, so
for those cells it takes the accuracy of the plaintext split NN with the identical
structure, initialisation and batch order, and the time and bytes of a few steps through
the protocol, scaled to the whole run (:mod:`benchmarks.stfl_runs`). This runs one such
cell both ways, through the benchmark's own code: the extrapolated cell exactly as
``benchmarks.stfl`` computes it, then the same seed's run through the protocol to the
end. It reports the measured against the projected training time, bytes per party and
inference time, and the protocol's accuracy against the split NN's.

A payment run with CKKS takes about an hour on the 2-core development machine; the
report records the SEAL rotation probe before and after it, since HE time follows the host.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks.common import (RESULTS_DIR, config_report, count_option, device_name, markdown_header, markdown_table,
                               run_main, writable, write_json, write_text)
from securefl.commands import plain_text

DATASETS = ("breast", "default_credit", "give_credit", "breast_sklearn")
QUICK = {"dataset": "breast_sklearn", "epochs": 1, "timed_steps": 2}


@dataclass(frozen=True)
class Config:
    """What to check: one dataset, seed and backend, ``epochs`` in full and ``timed_steps`` projected."""

    dataset: str
    seed: int
    he: str
    epochs: int
    timed_steps: int
    device: str
    quick: bool
    json_path: Path
    markdown_path: Path
    data_dir: Path | None = None


@dataclass(frozen=True)
class CellSettings:
    """The fields of ``benchmarks.stfl``'s Config that an HE-VFL cell reads (:mod:`benchmarks.stfl_runs`)."""

    epochs: int
    device: str
    he_timed_steps: int
    ckks_max_steps: int  # a cell of more steps than this is extrapolated
    paillier_max_steps: int


def parse_args(argv: Sequence[str] | None) -> Config:
    p = argparse.ArgumentParser(prog="python -m benchmarks.he_projection",
                                description=plain_text(__doc__.split("\n\n")[0]))
    p.add_argument("--quick", action="store_true",
                   help=f"bundled data, {QUICK['epochs']} epoch, {QUICK['timed_steps']} timed steps (labelled quick)")
    p.add_argument("--dataset", choices=DATASETS, default="default_credit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--he", choices=("ckks", "paillier"), default="ckks")
    p.add_argument("--epochs", type=count_option, default=100)
    p.add_argument("--timed-steps", type=count_option, default=5,
                   help="steps the projection times (benchmarks.stfl's default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", type=Path, default=None, help="dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--json", type=Path, default=None,
                   help="default benchmarks/results/he_projection.json (.quick.json with --quick)")
    p.add_argument("--markdown", type=Path, default=None, help="default: the --json path with .md")
    a = p.parse_args(argv)
    if a.seed < 0 or a.epochs < 1 or a.timed_steps < 2:  # the first timed step is counted once
        p.error(f"--seed must be >= 0, --epochs >= 1 and --timed-steps >= 2, got {a.seed}, {a.epochs}, "
                f"{a.timed_steps}")
    if a.quick and any(getattr(a, k) != p.get_default(k) for k in QUICK):  # they were silently dropped
        flags = ", ".join("--" + k.replace("_", "-") for k in QUICK)
        p.error(f"--quick sets {flags} itself; give them without --quick")
    device_name(p, a.device)
    a.json = a.json or RESULTS_DIR / ("he_projection.quick.json" if a.quick else "he_projection.json")
    markdown = a.markdown or a.json.with_suffix(".md")
    writable(p, json=a.json, markdown=markdown)
    sizes = QUICK if a.quick else {"dataset": a.dataset, "epochs": a.epochs, "timed_steps": a.timed_steps}
    return Config(seed=a.seed, he=a.he, device=a.device, quick=a.quick, json_path=a.json,
                  markdown_path=markdown, data_dir=a.data_dir, **sizes)


def run_both(cfg: Config) -> dict[str, Any]:
    """The extrapolated cell and the full run of one split, with the SEAL probe before, between and after."""
    from benchmarks.probe import seal_rotation_ms
    from benchmarks.stfl_runs import run_he_vfl_row
    from protocols.errors import SecureFLError
    from securefl.data import load_vertical, stfl_split

    try:
        split = stfl_split(load_vertical(cfg.dataset, data_dir=cfg.data_dir), seed=cfg.seed)
    except SecureFLError as err:
        raise SystemExit(f"python -m benchmarks.he_projection: {err}") from None
    cell = {"epochs": cfg.epochs, "device": cfg.device, "he_timed_steps": cfg.timed_steps}
    probes = [seal_rotation_ms()]
    projected = run_he_vfl_row(split, CellSettings(**cell, ckks_max_steps=0, paillier_max_steps=0),
                               cfg.seed, cfg.he)
    print(f"projected: {projected['seconds']:.1f} s from {projected['timed_steps']} of "
          f"{projected['total_steps']} steps", flush=True)
    probes.append(seal_rotation_ms())
    unlimited = 1 << 62
    measured = run_he_vfl_row(split, CellSettings(**cell, ckks_max_steps=unlimited, paillier_max_steps=unlimited),
                              cfg.seed, cfg.he)
    probes.append(seal_rotation_ms())
    print(f"measured: {measured['seconds']:.1f} s over {measured['steps']} steps", flush=True)
    return {"projected": projected, "measured": measured, "seal_rotation_ms": [round(p, 3) for p in probes]}


def compare(projected: dict[str, Any], measured: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per quantity: the projection, the full run, and measured / projected."""
    rows = [("training s", projected["phases"]["training"], measured["phases"]["training"]),
            ("inference s", projected["phases"]["inference"], measured["phases"]["inference"]),
            ("total s", projected["seconds"], measured["seconds"])]
    rows += [(f"bytes sent, {party}", projected["bytes_per_party"][party], measured["bytes_per_party"][party])
             for party in sorted(measured["bytes_per_party"])]
    rows += [(f"test {name}", projected["metrics"][name], measured["metrics"][name]) for name in ("accuracy", "auroc")]
    return [{"quantity": name, "projected": p, "measured": m, "ratio": m / p if p else None} for name, p, m in rows]


def to_markdown(report: dict[str, Any]) -> str:
    """The comparison table and what it shows, under the usual header."""
    s, proj = report["settings"], report["projected"]
    head = markdown_header("HE-VFL: the extrapolated cell against the full run", report)
    fmt = lambda q, v: "—" if v is None else (f"{v:.4f}" if q.startswith("test") else  # noqa: E731
                                             f"{v:,.0f}" if q.startswith("bytes") else f"{v:.1f}")
    table = markdown_table(["quantity", "projected (benchmarks.stfl)", "measured in full", "measured / projected"],
                           [(r["quantity"], fmt(r["quantity"], r["projected"]), fmt(r["quantity"], r["measured"]),
                             "—" if r["ratio"] is None else f"{r['ratio']:.3f}") for r in report["comparison"]])
    probes = ", ".join(f"{p} ms" for p in report["seal_rotation_ms"])
    return (f"{head}\n{s['dataset']}, seed {s['seed']}, HE-VFL with {s['he']}, "
            f"{s['epochs']} epoch{'s' if s['epochs'] != 1 else ''}: "
            f"{proj['total_steps']} training steps. The projection is `benchmarks.stfl`'s extrapolated cell "
            f"(the split NN's accuracy; time and bytes from {proj['timed_steps']} steps through the protocol, "
            f"the first counted once, scaled to {proj['total_steps']}); the full run is the same split, seed and "
            f"initialisation through the protocol to the last step, so its accuracy is the protocol's own.\n\n"
            f"{table}\nOne SEAL rotation (the host's speed) before the projection, before the full run and "
            f"after it: {probes}.\n")


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    report = config_report("he_projection", cfg, argv)
    runs = run_both(cfg)
    report.update(runs, comparison=compare(runs["projected"], runs["measured"]))
    write_json(cfg.json_path, report)
    write_text(cfg.markdown_path, to_markdown(report))
    print(f"wrote {cfg.json_path} and {cfg.markdown_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.he_projection"))
