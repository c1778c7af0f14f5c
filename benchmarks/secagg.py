"""Secure aggregation cost: masked (Bonawitz) vs plain summation through the same roles.

    python -m benchmarks.secagg [--quick] [--clients 10] [--length 1000000] [--repeats 5]
                                [--json benchmarks/results/secagg.json]

Every party runs in-process (one thread each), so a round's wall time holds the work
of all clients and the server on this machine's cores. Each scenario (plain or
secure, 0..k dropouts after key sharing) runs ``repeats`` times after one warm-up
round; the median is reported. A dropped client stops after key sharing and leaves
(its role returns), which the server notices at once, as over torch.distributed; one
that stayed silent instead would cost the stage timeout. The server reports its idle
wait and the table shows ``work = wall - wait`` and ``added = work(secure) - work(plain)``
for the same number of dropouts. A second table gives the PRG's keystream throughput.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import (RESULTS_DIR, count_option, markdown_header, markdown_table, named_report, run_main,
                               writable, write_json, write_text)
from protocols.channels import SecAggConfig, secagg_client, secagg_server
from protocols.channels.crypto import new_seed
from protocols.channels.prg import PRGS, MaskAccumulator
from protocols.errors import InputError
from protocols.transport import run_parties

TARGET_ADDED_SECONDS = 1.0
TARGET_SHAPE = (10, 1_000_000)  # clients x values, the defaults


@dataclass(frozen=True)
class BenchSettings:
    """What one benchmark run measures."""

    clients: int = 10
    length: int = 1_000_000
    repeats: int = 5
    max_dropouts: int = 2
    stage_timeout: float = 2.0
    scale_bits: int = 24
    prg: str = "aes128-ctr"
    quick: bool = False

    def __post_init__(self) -> None:
        if self.clients < 2 or self.length < 1 or self.repeats < 1:
            raise InputError("need --clients >= 2, --length >= 1 and --repeats >= 1")
        majority = self.clients // 2 + 1  # the default threshold t
        if not 0 <= self.max_dropouts <= self.clients - majority:
            raise InputError(f"--max-dropouts must leave a majority of the {self.clients} clients")
        self.secagg_config(secure=True)  # its own checks (stage timeout, scale, PRG) now, not mid-run

    def secagg_config(self, *, secure: bool) -> SecAggConfig:
        """The protocol configuration of one round."""
        return SecAggConfig(secure=secure, scale_bits=self.scale_bits, prg=self.prg,
                            stage_timeout=self.stage_timeout)


def _round(settings: BenchSettings, inputs: dict[str, np.ndarray], secure: bool,
           dropped: Sequence[str]) -> dict[str, Any]:
    """Run one round; return its wall time, the server's idle wait, bytes and error."""
    config = settings.secagg_config(secure=secure)
    roles: dict[str, Any] = {"server": secagg_server, **{c: secagg_client for c in inputs}}
    kwargs: dict[str, dict[str, Any]] = {"server": {"clients": list(inputs), "config": config}}
    for name, vector in inputs.items():
        kwargs[name] = {"server": "server", "vector": vector, "config": config,
                        "drop_after": "share_keys" if name in dropped else None}
    run = run_parties(roles, kwargs=kwargs)
    result = run.results["server"]
    expected = sum(v for c, v in inputs.items() if c not in dropped)
    client_bytes = [run.comm[c]["bytes_sent"] for c in inputs if c not in dropped]
    return {"seconds": run.seconds, "wait_seconds": result.wait_seconds,
            "survivors": len(result.survivors), "threshold": result.threshold,
            "max_abs_error": float(np.max(np.abs(result.vector - expected))),
            "bytes_per_client": int(statistics.mean(client_bytes)),
            "bytes_server": run.comm["server"]["bytes_sent"], "bytes_total": run.bytes}


def _scenario(settings: BenchSettings, inputs: dict[str, np.ndarray], secure: bool,
              dropouts: int) -> dict[str, Any]:
    """Median over repeats of one (secure, dropouts) setting."""
    dropped = list(inputs)[1:1 + dropouts]
    runs = [_round(settings, inputs, secure, dropped) for _ in range(settings.repeats)]
    seconds = [r["seconds"] for r in runs]
    work = [r["seconds"] - r["wait_seconds"] for r in runs]
    return {"secure": secure, "dropouts": dropouts, "dropped": dropped,
            "seconds": statistics.median(seconds), "seconds_all": seconds,
            "wait_seconds": statistics.median(r["wait_seconds"] for r in runs),
            "work_seconds": statistics.median(work), "work_seconds_all": work,
            **{k: runs[-1][k] for k in ("survivors", "threshold", "bytes_per_client", "bytes_server",
                                        "bytes_total")},
            "max_abs_error": max(r["max_abs_error"] for r in runs)}


def prg_throughput(length: int, masks: int = 10) -> list[dict[str, Any]]:
    """Single-thread keystream-to-uint64 mask throughput of each PRG."""
    rows = []
    acc = np.zeros(length, dtype=np.uint64)
    for name in PRGS:
        accumulator = MaskAccumulator(acc, name)
        accumulator.add(new_seed())  # warm-up
        start = time.perf_counter()
        for _ in range(masks):
            accumulator.add(new_seed())
        seconds = (time.perf_counter() - start) / masks
        rows.append({"prg": name, "seconds_per_mask": seconds, "words": length,
                     "gb_per_s": length * 8 / seconds / 1e9})
    return rows


def run(settings: BenchSettings) -> dict[str, Any]:
    """All scenarios: plain and secure for 0..max_dropouts dropouts."""
    rng = np.random.default_rng(0)  # benchmark data, not key material
    inputs = {f"c{i}": rng.normal(size=settings.length) for i in range(settings.clients)}
    _round(settings, inputs, True, [])  # warm-up: page in buffers, imports, thread pools
    results = []
    for dropouts in range(settings.max_dropouts + 1):
        plain = _scenario(settings, inputs, False, dropouts)
        secure = _scenario(settings, inputs, True, dropouts)
        secure["added_seconds"] = secure["work_seconds"] - plain["work_seconds"]
        secure["wall_added_seconds"] = secure["seconds"] - plain["seconds"]
        results += [plain, secure]
    added = [r["added_seconds"] for r in results if r["secure"]]
    return {"results": results, "prg": prg_throughput(settings.length),
            "target": {"added_seconds_max": TARGET_ADDED_SECONDS, "worst_added_seconds": max(added),
                       "met": max(added) < TARGET_ADDED_SECONDS}}


def _target_line(target: dict[str, Any], settings: BenchSettings) -> str:
    """The verdict, given only at the target's size (a --quick round of 20,000 values says nothing of it)."""
    line = (f"Target: under {target['added_seconds_max']:g} s added per round at {TARGET_SHAPE[0]} clients x"
            f" {TARGET_SHAPE[1]:,} values; worst measured {target['worst_added_seconds']:.3f} s")
    if (settings.clients, settings.length) != TARGET_SHAPE:
        return line + f" at {settings.clients} x {settings.length:,} (not judged: another size)."
    return line + f" ({'met' if target['met'] else 'NOT met'})."


def markdown(meta: dict[str, Any], out: dict[str, Any], settings: BenchSettings) -> str:
    """The Markdown report: the scenario table, the PRG table, and how to read them."""
    rows = [[("secure" if r["secure"] else "plain"), r["dropouts"], f"{r['survivors']}/{settings.clients}",
             f"{r['seconds']:.3f}", f"{r['wait_seconds']:.3f}", f"{r['work_seconds']:.3f}",
             f"{r['added_seconds']:+.3f}" if r["secure"] else "",
             f"{r['wall_added_seconds']:+.3f}" if r["secure"] else "", f"{r['bytes_per_client']:,}",
             f"{r['bytes_server']:,}", f"{r['max_abs_error']:.2e}"] for r in out["results"]]
    prg_rows = [[p["prg"], f"{p['seconds_per_mask'] * 1e3:.2f}", f"{p['gb_per_s']:.2f}"] for p in out["prg"]]
    target = out["target"]
    return "\n".join([
        markdown_header("Secure aggregation vs plain summation", meta),
        f"{settings.clients} clients x {settings.length:,} float64, one server, all in-process.",
        "Dropped clients stop after key sharing and leave, which the server notices at once (a client"
        f" that stayed silent would cost the stage timeout, {settings.stage_timeout:g} s; until 2026-11-28"
        f" a client that left in-process did too). Seconds are medians of {settings.repeats} rounds;"
        " work = wall - dropout wait (the server's idle time after the last surviving message);"
        " added work / wall = secure minus plain with the same dropouts. All parties share this"
        " machine's cores, so single rounds vary; medians smooth that.",
        "",
        markdown_table(["mode", "dropouts", "survivors", "wall s", "dropout wait s", "work s",
                        "added work s", "added wall s", "bytes sent / client", "bytes sent by server",
                        "max abs error"], rows),
        _target_line(target, settings),
        "",
        f"PRG mask expansion, one thread, {settings.length:,} uint64 words per mask:",
        "",
        markdown_table(["prg", "ms per mask", "GB/s"], prg_rows),
    ])


def parse_args(argv: Sequence[str] | None = None) -> tuple[BenchSettings, Path, Path]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.secagg", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small vectors, fewer repeats (labelled quick)")
    parser.add_argument("--clients", type=count_option, default=10)
    parser.add_argument("--length", type=count_option, default=None, help="floats per client (default 1e6, quick 2e4)")
    parser.add_argument("--repeats", type=count_option, default=None, help="rounds per scenario (default 5, quick 1)")
    parser.add_argument("--max-dropouts", type=count_option, default=2)
    parser.add_argument("--stage-timeout", type=float, default=2.0)
    parser.add_argument("--prg", choices=PRGS, default="aes128-ctr")
    parser.add_argument("--json", type=Path, default=None,
                        help="write results here (default benchmarks/results/secagg.json, quick: secagg.quick.json)")
    parser.add_argument("--md", type=Path, default=None, help="Markdown report (default: beside --json)")
    args = parser.parse_args(argv)
    try:
        settings = BenchSettings(
            clients=args.clients,
            length=args.length if args.length is not None else 20_000 if args.quick else 1_000_000,
            repeats=args.repeats if args.repeats is not None else 1 if args.quick else 5,
            max_dropouts=args.max_dropouts,
            stage_timeout=args.stage_timeout, prg=args.prg, quick=args.quick)
    except InputError as exc:
        parser.error(str(exc))
    # the Markdown and its JSON are written together: a run never leaves a committed pair disagreeing
    json_path = args.json or RESULTS_DIR / ("secagg.quick.json" if args.quick else "secagg.json")
    md = args.md or json_path.with_suffix(".md")
    writable(parser, json=json_path, md=md)
    return settings, json_path, md


def main(argv: Sequence[str] | None = None) -> int:
    settings, json_path, md_path = parse_args(argv)
    meta = named_report("secagg", settings=asdict(settings), quick=settings.quick, argv=argv)
    out = run(settings)
    write_json(json_path, {**meta, **out})
    write_text(md_path, markdown(meta, out, settings))
    print(markdown(meta, out, settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.secagg"))
