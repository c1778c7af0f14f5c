"""``securefl run stfl|he-vfl|gl|chfl|common|simple --role NAME --peer HOST:PORT``: one party per process or machine.

Each organisation runs its own party with only its own CSV over torch.distributed
(gloo). The vertical methods are here; the horizontal ones' server and clients are in
:mod:`securefl.commands.run_network_horizontal`. ``--parties`` names every party in the same
order on every machine. For STFL and HE-VFL the first is the active party (it holds
``--label`` and listens at ``--peer``), the others are passive. The active party
draws the 40/40/20 split from its own IDs and ``--seed`` alone
(:func:`securefl.data.split_ids`), so the parties need to agree on nothing else, and
a run gives the same result as ``securefl run stfl --party-csv`` with every file on
one machine, the same names and the same seed. What crosses the network is what the
method sends in simulation: for STFL, PSI messages, one channel handshake per passive
party and the passive parties' encrypted latents; for HE-VFL (one passive party), PSI
messages, the passive party's public HE context and the interactive layer's encrypted
and masked traffic.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

from protocols.errors import InputError
from securefl.commands import keygen
from securefl.results import write_json_atomically
from securefl.runtime import validation as check

NETWORK_METHODS = ("stfl", "he-vfl", "gl", "fedavg", "chfl", "common", "simple", "tdcd")
HORIZONTAL = ("gl", "fedavg", "chfl", "common", "simple")
DEFAULT_PARTIES = ("active", "passive")
WAIT = 3600.0
"""Seconds a party waits for one message when its method sets no limit (HE-VFL's passive party
waits for the active party's PSI and setup before the first batch)."""
EXAMPLE = ("securefl run stfl --party-csv hospital.csv --label y --role active --peer 0.0.0.0:29500\n"
           "  (other machine) securefl run stfl --party-csv lab.csv --role passive --peer HOSPITAL_HOST:29500\n"
           "  GL: securefl run gl --role server --parties clinic_a,clinic_b --peer 0.0.0.0:29500\n"
           "      securefl run gl --role clinic_a --parties clinic_a,clinic_b --csv a.csv --label y"
           " --peer SERVER_HOST:29500\n"
           "  CHFL: as GL, with --features 'common=age,bmi' --classes no,yes on every party\n"
           "  FedAvg: as GL, with --columns age,bmi,sex --classes no,yes on every party\n"
           "  TDCD: securefl run tdcd --role bank --parties 'bank=b1,b2;shop=s1' --peer 0.0.0.0:29500\n"
           "        securefl run tdcd --role b1 --parties 'bank=b1,b2;shop=s1' --csv b1.csv --id-column id"
           " --label y --peer BANK_HOST:29500")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "one party over the network (stfl, he-vfl, gl, chfl, common, simple; each machine gives only its own"
        " --party-csv or --csv)")
    group.add_argument("--role", metavar="NAME", help="run only this party (one of --parties)")
    group.add_argument("--parties", metavar="LIST", type=_names, default=DEFAULT_PARTIES,
                       help="the parties' names, comma-separated, the same on every machine: stfl/he-vfl, every"
                            " party, the first the active one (default: active,passive); gl and chfl, the"
                            " clients (the server is 'server'); tdcd, 'HUB=CLIENT,...;HUB=CLIENT,...'")
    group.add_argument("--peer", metavar="HOST:PORT",
                       help="with --role: the active party (gl, chfl: the server) listens here, the others"
                            " connect here")
    group.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                       help="with --role: seconds to wait for the other parties to join (default 600)")
    keygen.add_arguments(group)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(","))


def _check_csv_names(args: argparse.Namespace) -> None:
    """``--parties`` on one machine: a name per ``--party-csv`` file, in file order, so that the run
    is the one a networked run under those names gives (STFL seeds a passive party by its name)."""
    names = args.parties
    if not all(names) or len(set(names)) != len(names):
        raise InputError(f"--parties needs distinct, non-empty names, got {','.join(names)!r}")
    if len(names) != len(args.party_csv):
        raise InputError(f"--parties names {len(names)} parties for {len(args.party_csv)} --party-csv files;"
                         " give one name per file, in file order")


def check_args(args: argparse.Namespace) -> None:
    """One-line InputErrors for a network option that is missing, misplaced or malformed."""
    if args.role is None:
        for dest in ("peer", "parties", "timeout", "identity", "trust"):
            if dest == "parties" and args.method in ("stfl", "he-vfl") and args.party_csv:
                continue  # names the files' parties on one machine, as a networked run names them
            if getattr(args, dest) != args.option_default(dest):
                raise InputError(f"--{dest} needs --role NAME (one party over the network)")
        if args.parties != args.option_default("parties"):
            _check_csv_names(args)
        return
    if args.method not in NETWORK_METHODS:
        raise InputError(f"--role runs one party of {', '.join(NETWORK_METHODS)}; {args.method!r} runs only"
                         " with every party here")
    if not args.peer:
        raise InputError("--role needs --peer HOST:PORT (where the first party listens)")
    names = args.parties
    if not all(names) or len(set(names)) != len(names):
        raise InputError(f"--parties needs distinct, non-empty names, got {','.join(names)!r}")
    if args.backend != "inprocess":
        raise InputError("--backend applies to runs with every party here; with --role each party is its own"
                         " process already")
    check.peer_timeout(args.timeout)
    if args.method in HORIZONTAL:
        from securefl.commands.run_network_horizontal import check_horizontal_args

        return check_horizontal_args(args)
    if args.method == "tdcd":
        from securefl.commands.run_network_tdcd import check_tdcd_network_args

        return check_tdcd_network_args(args)
    if not args.party_csv or len(args.party_csv) != 1:
        raise InputError("with --role, give this party's one CSV with --party-csv (other parties keep theirs)")
    if len(names) < 2:
        raise InputError(f"--parties needs two or more names, got {','.join(names)!r}")
    if args.method == "he-vfl" and len(names) != 2:
        raise InputError(f"he-vfl has exactly one passive party: --parties names two, got {','.join(names)!r}")
    if args.role not in names:
        raise InputError(f"--role {args.role!r} is not in --parties ({','.join(names)})")


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


def run_as(args: argparse.Namespace, parties: tuple[str, ...], role: Callable[..., dict[str, Any]],
           kwargs: dict[str, Any], *, wait: float, agree: dict[str, Any]) -> tuple[dict[str, Any], Any, float, Any]:
    """Run ``role`` as party ``args.role`` of ``parties`` (rank 0 listens at ``--peer``); its
    result, transport meter, seconds and :class:`~securefl.runtime.GPUPeak` (this process
    runs one party only, so the peak is that party's). ``wait``: how long one message may
    take to come; ``agree``: the settings every party must share, checked when they meet."""
    from protocols.transport.torchdist import TorchDistTransport, parse_address
    from securefl.runtime import GPUPeak

    host, port = parse_address(args.peer)
    identity, trusted = keygen.load_identity(args, [p for p in parties if p != args.role])
    start = time.perf_counter()
    with TorchDistTransport(args.role, parties, host=host, port=port, timeout=wait, connect_timeout=args.timeout,
                            agree={"command": f"run {args.method}", **agree},
                            **keygen.transport_keys(identity, trusted)) as transport:
        with GPUPeak(args.device) as peak:
            result = role(transport, **kwargs)
    return result, transport.meter, time.perf_counter() - start, peak


def finish(args: argparse.Namespace, report: dict[str, Any], line: str, peak: Any) -> int:
    """Print the party's last line and write its ``--json`` (with ``gpu_peak_mib`` on a GPU); exit status 0."""
    print(line)
    if args.json:
        write_json_atomically(args.json, peak.into(report))
    return 0


def run_party(args: argparse.Namespace, config: Any, progress: Callable[[int, int], None] | None) -> int:
    """Run this one party of STFL or HE-VFL, print its line, write its ``--json``; exit status 0."""
    from dataclasses import replace

    parse_address_early(args)
    table = load_own_table(args)
    active = args.role == args.parties[0]
    role, kwargs = _active_role(table, args) if active else _passive_role(table, args)
    result, meter, seconds, peak = run_as(args, args.parties, role,
                                    {**kwargs, "config": replace(config, progress=progress)},
                                    wait=getattr(config, "timeout", WAIT), agree=vertical_agreed(config))
    report = _report(args, result, meter, seconds, config)
    return finish(args, report, _line(args, report), peak)


MACHINE_SETTINGS = frozenset({"device", "threads", "timeout", "cuda_graphs", "helper", "workers"})
"""Settings each machine may choose for itself: where and how fast it computes, how long it waits."""


def vertical_agreed(config: Any) -> dict[str, Any]:
    """The STFL or HE-VFL settings every party must share: all but :data:`MACHINE_SETTINGS`.
    A passive party's seed, learning rate or latent reading changes what it sends, and so the
    active party's result, silently; a mismatch is stopped when the parties meet instead."""
    return {k: v for k, v in sorted(config.settings().items()) if k not in MACHINE_SETTINGS}


def parse_address_early(args: argparse.Namespace) -> None:
    """A malformed ``--peer`` is an error before any data is read."""
    from protocols.transport.torchdist import parse_address

    parse_address(args.peer)


def _active_role(table: Any, args: argparse.Namespace) -> tuple[Callable[..., dict], dict[str, Any]]:
    """The active party's role and arguments: its rows less the self-taught ones (with
    ``--all-data``, those join training instead), and its train and test IDs."""
    from securefl.data import split_ids, without_ids

    self_taught, train, test = split_ids(table.ids, seed=args.seed, owner=str(args.party_csv[0]))
    if args.all_data:
        train, self_taught = train | self_taught, frozenset()
    kwargs = {"table": without_ids(table, self_taught), "train_ids": train, "test_ids": test}
    if args.method == "he-vfl":
        from baselines.he_vfl import he_vfl_active

        return he_vfl_active, {**kwargs, "passive": args.parties[1]}
    from securefl.algorithms.stfl import stfl_active

    return stfl_active, {**kwargs, "passive": list(args.parties[1:])}


def _passive_role(table: Any, args: argparse.Namespace) -> tuple[Callable[..., dict], dict[str, Any]]:
    if args.method == "he-vfl":
        from baselines.he_vfl import he_vfl_passive

        return he_vfl_passive, {"active": args.parties[0], "table": table}
    from securefl.algorithms.stfl import stfl_passive

    return stfl_passive, {"active": args.parties[0], "table": table}


def _report(args: argparse.Namespace, party: dict[str, Any], meter: Any, seconds: float,
            config: Any) -> dict[str, Any]:
    """The party's result object. ``bytes`` is what this party sent and received: for the active
    party, the hub of every exchange, that is everything sent by all parties."""
    sent, received = meter.bytes_sent, meter.bytes_received
    active = args.role == args.parties[0]
    report = {**{k: v for k, v in party.items() if k not in ("party", "role", "seconds", "bytes_sent")},
              "method": args.method, "dataset": "csv", "seed": args.seed, "device": str(config.device),
              "role": "active" if active else "passive", "party": args.role, "parties": list(args.parties),
              "seconds": seconds, "bytes": sent + received, "bytes_sent": sent, "bytes_received": received,
              "intersection_size": party.get("intersection_size", party.get("intersection")),
              "settings": {**config.settings(), "all_data": args.all_data, "backend": "torch (network)",
                           "peer": args.peer, "authenticated_links": args.identity is not None}}
    if not active:
        report["metrics"] = {}  # a passive party learns no labels, so no metric
    return report


def _line(args: argparse.Namespace, report: dict[str, Any]) -> str:
    tail = f"{report['seconds']:.2f} s | {report['bytes_sent']:,} bytes sent, {report['bytes_received']:,} received"
    rows = report["intersection_size"]
    if report["role"] == "active":
        m = report["metrics"]
        return (f"{args.method} on csv (seed {args.seed}), active party {args.role!r}: accuracy {m['accuracy']:.4f}"
                f" | AUROC {m.get('auroc', float('nan')):.4f} | {rows} common rows | {tail}")
    if args.method == "he-vfl":
        return f"he-vfl passive party {args.role!r}: {report['steps']} training steps on {rows} common rows | {tail}"
    return (f"stfl passive party {args.role!r}: latents of {rows} common rows sent; VAE"
            f" pretrained on {report['self_taught_rows']} self-taught rows | {tail}")


__all__ = ["DEFAULT_PARTIES", "NETWORK_METHODS", "add_arguments", "check_args", "finish", "load_own_table",
           "parse_address_early", "run_as", "run_party"]
