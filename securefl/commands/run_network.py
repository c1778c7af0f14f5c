"""``securefl run stfl --role NAME --peer HOST:PORT``: one STFL party per process or machine.

Each organisation runs its own party with only its own CSV over torch.distributed
(gloo). ``--parties`` names every party in the same order on every machine; the
first is the active party (it holds ``--label`` and listens at ``--peer``), the
others are passive. The active party draws the 40/40/20 split from its own IDs and
``--seed`` alone (:func:`securefl.data.split_ids`), so the parties need to agree on
nothing else, and a run gives the same result as ``securefl run stfl --party-csv``
with every file on one machine, the same names and the same seed. What crosses the
network is what STFL sends in simulation: PSI messages, one channel handshake per
passive party, and the passive parties' encrypted latents.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

from protocols.errors import InputError
from securefl.results import write_json_atomically

DEFAULT_PARTIES = ("active", "passive")
LINGER_ON_FAILURE = 1.0
"""Seconds a failing or interrupted party waits for its peers' goodbyes: a passive party busy
pretraining its VAE would otherwise hold an interrupted active party for the whole linger."""
EXAMPLE = ("securefl run stfl --party-csv hospital.csv --label y --role active --peer 0.0.0.0:29500\n"
           "  (other machine) securefl run stfl --party-csv lab.csv --role passive --peer HOSPITAL_HOST:29500")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "one party over the network (stfl; each machine gives only its own --party-csv)")
    group.add_argument("--role", metavar="NAME", help="run only this party (one of --parties)")
    group.add_argument("--parties", metavar="LIST", type=_names, default=DEFAULT_PARTIES,
                       help="every party's name, comma-separated, the same on every machine; the first is"
                            " the active party (default: active,passive)")
    group.add_argument("--peer", metavar="HOST:PORT",
                       help="with --role: the active party listens here, the passive parties connect here")
    group.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                       help="with --role: seconds to wait for the other parties to join (default 600)")


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(","))


def check_args(args: argparse.Namespace) -> None:
    """One-line InputErrors for a network option that is missing, misplaced or malformed."""
    if args.role is None:
        for dest in ("peer", "parties", "timeout"):
            if getattr(args, dest) != args.option_default(dest):
                raise InputError(f"--{dest} needs --role NAME (one party over the network)")
        return
    if args.method != "stfl":
        raise InputError(f"--role runs one party of stfl; {args.method!r} runs only with every party here")
    if not args.party_csv or len(args.party_csv) != 1:
        raise InputError("with --role, give this party's one CSV with --party-csv (other parties keep theirs)")
    if not args.peer:
        raise InputError("--role needs --peer HOST:PORT (where the active party listens)")
    names = args.parties
    if len(names) < 2 or not all(names) or len(set(names)) != len(names):
        raise InputError(f"--parties needs two or more distinct, non-empty names, got {','.join(names)!r}")
    if args.role not in names:
        raise InputError(f"--role {args.role!r} is not in --parties ({','.join(names)})")
    if args.backend != "inprocess":
        raise InputError("--backend applies to runs with every party here; with --role each party is its own"
                         " process already")
    if not 0 < args.timeout <= 1e6:  # NaN and inf too
        raise InputError(f"--timeout must be a positive number of seconds (at most 1e6), got {args.timeout}")


def load_own_table(args: argparse.Namespace) -> Any:
    """This party's table from its one CSV; the active party's must hold ``--label``, a passive one's not."""
    from securefl.data import read_party_csv
    from securefl.data.loaders import party_from_frame

    path = Path(args.party_csv[0])
    frame = read_party_csv(path, args.id_column)
    active = args.role == args.parties[0]
    if active and args.label not in frame.columns:
        raise InputError(f"{path}: no label column {args.label!r}; --role {args.role} is the first of --parties,"
                         " the active party, which holds the label")
    if not active and args.label in frame.columns:
        raise InputError(f"{path}: passive party {args.role!r} has the label column {args.label!r}; only the"
                         f" active party ({args.parties[0]!r}, the first of --parties) may hold it")
    table, _ = party_from_frame(frame, source=str(path), name=args.role, id_column=args.id_column,
                                label_column=args.label if active else None)
    return table


def run_party(args: argparse.Namespace, config: Any, progress: Callable[[int, int], None] | None) -> int:
    """Run this one party of STFL, print its line, write its ``--json``; exit status 0."""
    from dataclasses import replace

    from protocols.transport.torchdist import TorchDistTransport, parse_address

    host, port = parse_address(args.peer)
    table = load_own_table(args)
    active = args.role == args.parties[0]
    role, kwargs = _active_role(table, args) if active else _passive_role(table, args)
    start = time.perf_counter()
    transport = TorchDistTransport(args.role, args.parties, host=host, port=port,
                                   timeout=config.timeout, connect_timeout=args.timeout)
    try:
        result = role(transport, config=replace(config, progress=progress), **kwargs)
    except BaseException:  # Ctrl-C or an error: tell the peers, but do not wait out theirs
        transport.close(linger=LINGER_ON_FAILURE)
        raise
    transport.close()
    report = _report(args, result, transport.meter, time.perf_counter() - start, config)
    print(_line(args, report))
    if args.json:
        write_json_atomically(args.json, report)
    return 0


def _active_role(table: Any, args: argparse.Namespace) -> tuple[Callable[..., dict], dict[str, Any]]:
    from securefl.algorithms.stfl import stfl_active
    from securefl.data import split_ids, without_ids

    self_taught, train, test = split_ids(table.ids, seed=args.seed, owner=f"{args.party_csv[0]}")
    return stfl_active, {"passive": list(args.parties[1:]), "table": without_ids(table, self_taught),
                         "train_ids": train, "test_ids": test}


def _passive_role(table: Any, args: argparse.Namespace) -> tuple[Callable[..., dict], dict[str, Any]]:
    from securefl.algorithms.stfl import stfl_passive

    return stfl_passive, {"active": args.parties[0], "table": table}


def _report(args: argparse.Namespace, party: dict[str, Any], meter: Any, seconds: float,
            config: Any) -> dict[str, Any]:
    """The party's result object. ``bytes`` is what this party sent and received: for the active
    party, the hub of every exchange, that is everything sent by all parties."""
    sent, received = meter.bytes_sent, meter.bytes_received
    report = {"method": "stfl", "dataset": "csv", "seed": args.seed, "device": str(config.device),
              "role": party["role"], "party": args.role, "parties": list(args.parties),
              "seconds": seconds, "bytes": sent + received, "bytes_sent": sent, "bytes_received": received,
              "settings": {**config.settings(), "backend": "torch (network)", "peer": args.peer},
              **{k: v for k, v in party.items() if k not in ("party", "role", "seconds", "bytes_sent")}}
    if party["role"] == "active":
        report["intersection_size"] = party["intersection"]
    else:
        report["metrics"] = {}  # a passive party learns no labels, so no metric
    return report


def _line(args: argparse.Namespace, report: dict[str, Any]) -> str:
    tail = f"{report['seconds']:.2f} s | {report['bytes_sent']:,} bytes sent, {report['bytes_received']:,} received"
    if report["role"] == "active":
        m = report["metrics"]
        return (f"stfl on csv (seed {args.seed}), active party {args.role!r}: accuracy {m['accuracy']:.4f}"
                f" | AUROC {m.get('auroc', float('nan')):.4f} | {report['intersection']} common rows | {tail}")
    return (f"stfl passive party {args.role!r}: latents of {report['intersection']} common rows sent; VAE"
            f" pretrained on {report['self_taught_rows']} self-taught rows | {tail}")


__all__ = ["DEFAULT_PARTIES", "add_arguments", "check_args", "load_own_table", "run_party"]
