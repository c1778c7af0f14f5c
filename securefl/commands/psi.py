"""``securefl psi``: align two parties' CSV rows by private set intersection.

Local mode runs both parties in this process over the in-process transport and
writes ``DIR/left.csv`` and ``DIR/right.csv``. Network mode (``--role``) runs one
party per process over torch.distributed and writes ``DIR/<role>.csv``. Either
way the rows of every output file are in the same agreed order.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from protocols.errors import InputError
from protocols.psi import intersect, psi_two_party
from securefl.commands import keygen, plain_text
from securefl.data import read_party_csv, write_csv_atomically
from securefl.data.tables import exact_ids
from securefl.results import check_apart, check_distinct_inputs, check_output, write_json_atomically
from securefl.runtime import validation as check

EXAMPLE = "securefl psi left.csv right.csv --id-column id --out aligned/"


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "psi", help="align two parties' rows by private set intersection (ECDH over X25519)",
        description=plain_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"example: {EXAMPLE}\n  network: securefl psi left.csv --role server --peer 0.0.0.0:29500"
               " --id-column id --out aligned/\n           securefl psi right.csv --role client"
               " --peer SERVER_HOST:29500 --id-column id --out aligned/")
    p.add_argument("files", nargs="+", metavar="CSV",
                   help="LEFT.csv RIGHT.csv (local), or this party's one CSV with --role")
    p.add_argument("--id-column", required=True, help="column holding the IDs (compared as exact strings)")
    p.add_argument("--out", required=True, type=Path, help="folder for the aligned rows")
    p.add_argument("--json", type=Path, help="write intersection_size, seconds and bytes here")
    p.add_argument("--role", choices=("server", "client"), help="run one party over the network")
    p.add_argument("--peer", metavar="HOST:PORT",
                   help="with --role: the server listens here, the client connects here")
    p.add_argument("--workers", type=int, default=None, help="processes for blinding (default: all cores)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the peer")
    keygen.add_arguments(p)
    p.set_defaults(handler=run)


def _check_args(args: argparse.Namespace) -> None:
    if args.role is None:
        if len(args.files) != 2:
            raise InputError(f"psi needs LEFT.csv and RIGHT.csv (got {len(args.files)} files);"
                             " use --role server|client --peer HOST:PORT to run one party")
        if args.peer:
            raise InputError("--peer needs --role server|client")
        if args.identity or args.trust:
            raise InputError("--identity and --trust need --role server|client (links over the network)")
    else:
        if len(args.files) != 1:
            raise InputError(f"with --role, give only this party's CSV (got {len(args.files)} files)")
        if not args.peer:
            raise InputError("--role needs --peer HOST:PORT")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be at least 1, got {args.workers}")
    check.peer_timeout(args.timeout)
    check_output(args.out, "--out", folder=True)
    if args.json:
        check_output(args.json, "--json")
        if Path(args.json).resolve() == Path(args.out).resolve():
            raise InputError(f"--json {args.json} is the --out folder; name a file outside it")
    written = ["left.csv", "right.csv"] if args.role is None else [f"{args.role}.csv"]
    inputs = [*(("input", f) for f in args.files), ("--identity", args.identity), ("--trust", args.trust)]
    check_distinct_inputs(inputs, only=("--identity", "--trust"))  # one table twice is a valid (if dull) PSI
    check_apart([*(("--out", Path(args.out) / name) for name in written), ("--json", args.json)], inputs)


def _load(path: Path, id_column: str) -> tuple[Any, list[str]]:
    frame = read_party_csv(path, id_column)
    return frame, exact_ids(frame[id_column], str(path), id_column)


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    if args.role is not None:
        return _run_network(args)
    (left, left_ids), (right, right_ids) = (_load(Path(f), args.id_column) for f in args.files)
    res_l, res_r, run_ = intersect(left_ids, right_ids, workers=args.workers, timeout=args.timeout)
    write_csv_atomically(args.out, {"left.csv": left.iloc[res_l.indices],
                                    "right.csv": right.iloc[res_r.indices]})
    _report(args, size=res_l.size, seconds=run_.seconds, nbytes=run_.bytes,
            extra={"mode": "local", "left_rows": len(left), "right_rows": len(right),
                   "messages": run_.messages})
    return 0


def _run_network(args: argparse.Namespace) -> int:
    from protocols.transport.torchdist import TorchDistTransport, parse_address

    host, port = parse_address(args.peer)
    frame, ids = _load(Path(args.files[0]), args.id_column)
    peer = "client" if args.role == "server" else "server"
    identity, trusted = keygen.load_identity(args, [peer])
    start = time.perf_counter()
    with TorchDistTransport(args.role, ("server", "client"), host=host, port=port, timeout=args.timeout,
                            connect_timeout=args.timeout, agree={"command": "psi"},
                            **keygen.transport_keys(identity, trusted)) as transport:
        result = psi_two_party(transport, peer=peer, ids=ids, workers=args.workers)
    seconds = time.perf_counter() - start
    write_csv_atomically(args.out, {f"{args.role}.csv": frame.iloc[result.indices]})
    meter = transport.meter
    # Two parties: what both sent is what this one sent plus what it received.
    _report(args, size=result.size, seconds=seconds, nbytes=meter.bytes_sent + meter.bytes_received,
            extra={"mode": "network", "role": args.role, "rows": len(frame),
                   "authenticated_links": identity is not None,
                   "bytes_sent": meter.bytes_sent, "bytes_received": meter.bytes_received})
    return 0


def _report(args: argparse.Namespace, *, size: int, seconds: float, nbytes: int,
            extra: dict[str, Any]) -> None:
    print(f"intersection: {size} rows | {seconds:.2f} s | {nbytes:,} bytes sent | rows written to {args.out}/")
    if args.json:
        write_json_atomically(args.json, {"intersection_size": size, "seconds": seconds, "bytes": nbytes,
                                          "id_column": args.id_column, **extra})
