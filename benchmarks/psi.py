"""PSI benchmark: our ECDH PSI against OpenMined PSI on the same ID sets.

    python -m benchmarks.psi [--sizes 100000,1000000] [--quick] [--workers N]
                             [--skip-openmined] --json FILE [--markdown FILE]

For each size n, two parties hold n random string IDs each, half of them shared.
Ours runs both parties in this process over the in-process transport, sharing one
pool of ``--workers`` processes (default: all cores); its time is the wall time of
the whole run (ID checks, hashing, blinding, messages, matching) and its bytes are
everything both parties sent. OpenMined PSI (``private_set_intersection``, server
and client in this process, reveal_intersection=True, GCS setup) runs the standard
setup/request/response flow; its bytes are the serialized protobuf sizes. Note the
outputs differ: ours gives both parties the intersection, aligned; OpenMined's
client alone learns it. items/s counts the IDs of both parties.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (config_report, count_option, markdown_header, markdown_table, run_main, writable,
                               write_json, write_text)
from protocols.psi import intersect
from protocols.psi.parallel import MIN_PARALLEL
from securefl.commands import plain_text

DEFAULT_SIZES = (100_000, 1_000_000)
QUICK_SIZES = (10_000,)


@dataclass(frozen=True)
class Config:
    """What one benchmark run measures."""

    sizes: tuple[int, ...]
    quick: bool
    workers: int | None
    skip_openmined: bool
    json_path: Path
    markdown_path: Path
    overlap: float = 0.5
    fpr: float = 1e-9
    seed: int = 0


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"--sizes must be positive, got {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.psi", description=plain_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes,
                        help="IDs per party, comma-separated (default 100000,1000000)")
    parser.add_argument("--quick", action="store_true", help=f"small sizes {QUICK_SIZES}, labelled quick")
    parser.add_argument("--workers", type=count_option, default=None, help="blinding processes (default: all cores)")
    parser.add_argument("--skip-openmined", action="store_true", help="time only our PSI")
    parser.add_argument("--json", type=Path, required=True, help="write the results here")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="write the Markdown table here (default: --json with .md, so a scratch run "
                             "never overwrites benchmarks/results/psi.md)")
    args = parser.parse_args(argv)
    args.markdown = args.markdown or args.json.with_suffix(".md")
    writable(parser, json=args.json, markdown=args.markdown)
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    if not args.skip_openmined and not openmined_available():
        parser.error("OpenMined PSI (the comparison peer) is not installed: "
                     "pip install -e '.[bench]', or pass --skip-openmined")
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    return Config(sizes=sizes, quick=args.quick, workers=args.workers, skip_openmined=args.skip_openmined,
                  json_path=args.json, markdown_path=args.markdown)


def openmined_available() -> bool:
    """Whether the optional OpenMined PSI package (the ``bench`` extra) can be imported."""
    try:  # the module run_openmined imports; find_spec imports the parent package first
        return importlib.util.find_spec("private_set_intersection.python") is not None
    except ModuleNotFoundError:
        return False


def make_sets(n: int, *, overlap: float, seed: int) -> tuple[list[str], list[str], int]:
    """Two shuffled lists of n distinct random string IDs sharing round(overlap * n)."""
    common = round(overlap * n)
    rng = np.random.default_rng(seed)
    values = np.unique(rng.integers(0, 2**63, size=2 * n - common + 1024, dtype=np.int64))
    rng.shuffle(values)
    ids = [f"user-{v:016x}" for v in values[:2 * n - common].tolist()]
    left, right = ids[:n], ids[n - common:2 * n - common]
    rng.shuffle(right)
    return left, right, common


def time_ours(left: list[str], right: list[str], *, workers: int | None) -> dict[str, Any]:
    start = time.perf_counter()
    res_left, res_right, run = intersect(left, right, workers=workers)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "bytes": run.bytes, "messages": run.messages,
            "intersection_size": res_left.size, "parties_agree": res_left.ids == res_right.ids,
            "items_per_second": (len(left) + len(right)) / seconds, "found": set(res_left.ids)}


TARGET_SIZE = 1_000_000
TARGET_SPEEDUP = 4.0


def time_openmined(left: list[str], right: list[str], *, fpr: float) -> dict[str, Any]:
    import private_set_intersection.python as om

    start = time.perf_counter()
    server = om.server.CreateWithNewKey(True)
    client = om.client.CreateWithNewKey(True)
    setup = server.CreateSetupMessage(fpr, len(right), left, om.DataStructure.GCS)
    request = client.CreateRequest(right)
    response = server.ProcessRequest(request)
    found = client.GetIntersection(setup, response)
    seconds = time.perf_counter() - start
    nbytes = sum(len(m.SerializeToString()) for m in (setup, request, response))
    return {"seconds": seconds, "bytes": nbytes, "messages": 3, "intersection_size": len(found),
            "items_per_second": (len(left) + len(right)) / seconds, "version": om.__version__,
            "found": {right[i] for i in found}}  # its indices are into the client's (right) set


def x25519_seconds_per_op(samples: int = 20000) -> float:
    """Seconds per X25519 scalar multiplication through the call PSI uses, one core."""
    from protocols.psi import multiplier
    from protocols.psi.curve import new_scalar

    mul = multiplier(new_scalar())
    points = [os.urandom(32) for _ in range(samples)]
    start = time.perf_counter()
    for u in points:
        mul(u)
    return (time.perf_counter() - start) / samples


def run_size(n: int, cfg: Config) -> dict[str, Any]:
    left, right, truth = make_sets(n, overlap=cfg.overlap, seed=cfg.seed + n)
    common = set(left) & set(right)  # correct means these IDs, not only this many
    row: dict[str, Any] = {"size": n, "overlap": cfg.overlap, "true_intersection": truth}
    row["ours"] = time_ours(left, right, workers=cfg.workers)
    row["ours"]["correct"] = row["ours"].pop("found") == common and row["ours"]["parties_agree"]
    print(f"n={n:,}: ours {row['ours']['seconds']:.2f} s", flush=True)
    gc.collect()
    if not cfg.skip_openmined:
        row["openmined"] = time_openmined(left, right, fpr=cfg.fpr)
        row["openmined"]["correct"] = row["openmined"].pop("found") == common
        row["speedup"] = row["openmined"]["seconds"] / row["ours"]["seconds"]
        print(f"n={n:,}: OpenMined {row['openmined']['seconds']:.2f} s, speedup {row['speedup']:.2f}x",
              flush=True)
    return row


def to_markdown(report: dict[str, Any]) -> str:
    headers = ["IDs per party", "intersection", "ours s", "floor s", "ours items/s", "ours MB", "OpenMined s",
               "OpenMined items/s", "OpenMined MB", "speedup", "correct"]
    rows = []
    for r in report["results"]:
        ours, om = r["ours"], r.get("openmined")
        rows.append([f"{r['size']:,}", f"{r['true_intersection']:,}", f"{ours['seconds']:.2f}",
                     f"{r['floor_seconds']:.2f}",
                     f"{ours['items_per_second']:,.0f}", f"{ours['bytes'] / 1e6:.1f}",
                     f"{om['seconds']:.2f}" if om else "—", f"{om['items_per_second']:,.0f}" if om else "—",
                     f"{om['bytes'] / 1e6:.1f}" if om else "—", f"{r['speedup']:.2f}x" if om else "—",
                     "yes" if ours["correct"] and (om is None or om["correct"]) else "**NO**"])
    target = next((r for r in report["results"] if r["size"] == TARGET_SIZE and "speedup" in r), None)
    floor = report["x25519"]
    note = (f"\nX25519 through `cryptography`: {floor['us_per_op']:.1f} µs per scalar multiplication on one"
            " core. ECDH PSI needs 2 per ID per party, so both parties' 4n multiplications on"
            f" {floor['cores']} cores take at least {floor['us_per_op'] * 4 / floor['cores']:.1f} µs x n;"
            " 'floor s' is that bound for the curve operations alone (on one core below"
            f" {MIN_PARALLEL:,} IDs, which are blinded in the calling process).\n")
    if target is not None:
        verdict = "met" if target["speedup"] >= TARGET_SPEEDUP else "**not met**"
        note += (f"\nTarget: at least {TARGET_SPEEDUP:g}x faster than OpenMined PSI at {TARGET_SIZE:,} IDs"
                 f" per party: {target['speedup']:.2f}x ({verdict}).\n")
    note += ("\nBoth parties run on the same machine. Ours: ECDH PSI over X25519, both parties get the"
             f" intersection in one order, blinding on {floor['cores']} worker process(es) from {MIN_PARALLEL:,} IDs;"
             " OpenMined: ECDH over"
             " P-256 on one thread (its Python API has no thread setting), client learns the intersection. So"
             " the speedup is of the tools as they run here, not per core. items/s counts both parties' IDs;"
             " 'correct' compares the IDs found with the true intersection.\n")
    return markdown_header("PSI: securefl vs OpenMined", report) + "\n" + markdown_table(headers, rows) + note


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    report = config_report("psi", cfg, argv, paths=("json_path", "markdown_path"),
                           extra={"workers": cfg.workers or os.cpu_count(),
                                  "pool": "one process pool shared by both parties"})
    cores = cfg.workers or os.cpu_count() or 1
    per_op = x25519_seconds_per_op(2000 if cfg.quick else 20000)
    report["x25519"] = {"us_per_op": per_op * 1e6, "cores": cores}
    report["results"] = [run_size(n, cfg) for n in cfg.sizes]
    for row in report["results"]:
        # below MIN_PARALLEL IDs the blinding runs in the calling process, on one core
        row["floor_seconds"] = 4 * row["size"] * per_op / (cores if row["size"] >= MIN_PARALLEL else 1)
    write_json(cfg.json_path, report)
    write_text(cfg.markdown_path, to_markdown(report))
    print(f"wrote {cfg.json_path} and {cfg.markdown_path}")
    ok = all(r["ours"]["correct"] and r.get("openmined", {}).get("correct", True) for r in report["results"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.psi"))
