"""``securefl run gl --role server|CLIENT``: GL's averaging server and each client on its own machine.

``--parties`` names the clients; the server is the party ``server`` (it listens at
``--peer``). A client gives only its own CSV (``--csv FILE --label COL``, every row its
own). It splits its rows per seed as ``--csv --client-column`` splits each client's,
fits its encoders on its own training rows, starts from the run seed (so every
client's global layers start equal) and federates only the global layers, through
secure aggregation unless ``--no-secure-agg``: the server holds no model and sees
masked sums only. So each client gets the result that ``securefl run gl --csv ALL.csv
--client-column COL`` gives it, with the same seed and settings.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, Callable

from protocols.errors import InputError
from securefl.commands.run_horizontal import gl_config
from securefl.commands.run_network import finish, parse_address_early, run_as

SERVER = "server"  # securefl.algorithms.gl.SERVER, without importing torch for argument checks


def check_gl_args(args: argparse.Namespace) -> None:
    """One-line InputErrors for GL's network options (the shared ones are checked already)."""
    names = args.parties
    if names == args.option_default("parties"):
        raise InputError("gl with --role needs --parties naming its clients, e.g. --parties clinic_a,clinic_b"
                         f" (the server is {SERVER!r})")
    if len(names) < 2:
        raise InputError(f"gl needs two or more clients in --parties, got {','.join(names)!r}")
    if SERVER in names:
        raise InputError(f"--parties names gl's clients; {SERVER!r} is the server's own name")
    if args.role != SERVER and args.role not in names:
        raise InputError(f"--role {args.role!r} is neither {SERVER!r} nor a client in --parties ({','.join(names)})")
    if args.client_column:
        raise InputError("--client-column splits one CSV among clients; with --role, --csv is this client's own")
    if args.dataset:
        raise InputError("with --role, each gl client gives its own --csv, not --dataset")
    if args.role == SERVER and args.csv is not None:
        raise InputError(f"the {SERVER!r} holds no data: drop --csv")
    if args.role != SERVER and args.csv is None:
        raise InputError(f"client {args.role!r} needs its own data: --csv FILE --label COL")


def run_gl_party(args: argparse.Namespace, progress: Callable[[int, int], None] | None) -> int:
    """Run the server or this one client of GL, print its line, write its ``--json``; exit status 0."""
    parse_address_early(args)
    config = replace(gl_config(args, "csv"), secure=args.secure_agg)
    if config.rounds() == 0:
        raise InputError("gl with one epoch and --final local averages nothing, so there is nothing to run over"
                         " the network; give --epochs 2 or more, or --final average")
    parties = (SERVER, *args.parties)
    if args.role == SERVER:
        return _serve(args, config, parties)
    return _client(args, config, parties, progress)


def _serve(args: argparse.Namespace, config: Any, parties: tuple[str, ...]) -> int:
    from securefl.runtime.federated import averaging_server

    kwargs = {"clients": list(args.parties), "rounds": config.rounds(), "config": config.secagg()}
    result, meter, seconds = run_as(args, parties, averaging_server, kwargs, wait=config.stage_timeout,
                                    agree=_agreed(config))
    rounds, dropped = result["round_seconds"], result["dropped"]
    report = {**_common(args, config, meter, seconds), "role": "server", "metrics": {}, "dropped": dropped,
              "round_seconds": rounds, "rounds": len(rounds), "mean_round_seconds": sum(rounds) / len(rounds)}
    mode = "masked sums only" if config.secure else "plain averages, --no-secure-agg"
    gone = "".join(f"; {c!r} dropped out in round {r}" for c, r in dropped.items())
    return finish(args, report, f"gl server: {len(rounds)} rounds averaged for {len(args.parties)} clients ({mode}"
                                f"{gone}) | {report['mean_round_seconds']:.3f} s/round | {_tail(report)}")


def _client(args: argparse.Namespace, config: Any, parties: tuple[str, ...],
            progress: Callable[[int, int], None] | None) -> int:
    from securefl.algorithms.gl import check_client, gl_client
    from securefl.data.gl_sets import encode_client, load_client_csv, split_client

    data = encode_client(split_client(load_client_csv(args.csv, label=args.label, name=args.role), args.seed))
    check_client(data, config)
    kwargs = {"data": data, "scope": "global", "config": replace(config, progress=progress)}
    result, meter, seconds = run_as(args, parties, gl_client, kwargs, wait=config.stage_timeout,
                                    agree=_agreed(config))
    report = {**_common(args, config, meter, seconds), "role": "client",
              "metrics": {**result["metrics"], "per_class": result["per_class"]},
              **{k: result[k] for k in ("train_rows", "test_rows", "evaluated_on", "train_seconds")},
              "parameters": result["parameters"], "federated_parameters": result["federated"]}
    m = report["metrics"]
    auroc = f" | AUROC {m['auroc']:.4f}" if m.get("auroc") is not None else ""
    return finish(args, report, f"gl client {args.role!r} (seed {args.seed}): accuracy {m['accuracy']:.4f}{auroc}"
                                f" on {report['test_rows']} test rows | {_tail(report)}")


def _agreed(config: Any) -> dict[str, Any]:
    """The settings on which the server's round count and the clients' global layers depend."""
    keep = ("seed", "epochs", "batches", "aggregate", "eta", "secure", "federate_bn_stats", "final_average", "shape")
    return {k: v for k, v in config.settings().items() if k in keep}


def _common(args: argparse.Namespace, config: Any, meter: Any, seconds: float) -> dict[str, Any]:
    """The result fields every GL party reports; ``bytes`` is what it sent plus what it received."""
    sent, received = meter.bytes_sent, meter.bytes_received
    return {"method": "gl", "dataset": "csv", "seed": args.seed, "device": str(config.device),
            "party": args.role, "parties": [SERVER, *args.parties], "seconds": seconds,
            "bytes": sent + received, "bytes_sent": sent, "bytes_received": received,
            "settings": {**config.settings(), "backend": "torch (network)", "peer": args.peer,
                         "authenticated_links": args.identity is not None,
                         "federated": "global layers (MLP layers 2-4)",
                         "aggregation": "secure (masked sums)" if config.secure else "plain"}}


def _tail(report: dict[str, Any]) -> str:
    return f"{report['seconds']:.2f} s | {report['bytes_sent']:,} bytes sent, {report['bytes_received']:,} received"


__all__ = ["SERVER", "check_gl_args", "run_gl_party"]
