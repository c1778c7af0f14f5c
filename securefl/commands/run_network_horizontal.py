"""``securefl run gl|fedavg|chfl|common|simple --role server|CLIENT``: the server and each client on its own.

``--parties`` names the clients; the server is the party ``server`` (it listens at
``--peer``). A client gives only its own CSV (``--csv FILE --label COL``, every row its
own), splits its rows per seed as ``--csv --client-column`` splits each client's, fits
its scalers and encoders on its own training rows and starts its federated layers from
the run seed, so every client's start equal. Only those layers are averaged, through
secure aggregation unless ``--no-secure-agg``: the server holds no model and sees
masked sums only. So each client gets the result that the one-file run (``securefl run
METHOD --csv ALL.csv --client-column COL``) gives it, with the same seed and settings.

GL federates its global layers. FedAvg federates the whole model, so every party is
given the federation's schema, ``--columns`` (the union of the clients' feature
columns, in order; a client pads the ones it lacks with zeros) and ``--classes``, as
the one-file run derives them from all clients' rows. CHFL (and its baselines Common and the simple method)
federate the common column, so every party, the server too, is started with the
federation's schema: ``--features 'common=COL,...'`` and ``--classes A,B,...``; the
parties compare it, with the other settings they must share, when they meet.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, Callable

from protocols.errors import InputError
from securefl.commands.run_horizontal import chfl_config, gl_config
from securefl.commands.run_network import finish, parse_address_early, run_as

SERVER = "server"  # securefl.algorithms.gl.SERVER and chfl.SERVER, without importing torch for argument checks
Progress = Callable[[int, int], None] | None


def check_horizontal_args(args: argparse.Namespace) -> None:
    """One-line InputErrors for the server/client options (the shared ones are checked already)."""
    names = args.parties
    if names == args.option_default("parties"):
        raise InputError(f"{args.method} with --role needs --parties naming its clients, e.g. --parties"
                         f" clinic_a,clinic_b (the server is {SERVER!r})")
    if len(names) < 2:
        raise InputError(f"{args.method} needs two or more clients in --parties, got {','.join(names)!r}")
    if SERVER in names:
        raise InputError(f"--parties names {args.method}'s clients; {SERVER!r} is the server's own name")
    if args.role != SERVER and args.role not in names:
        raise InputError(f"--role {args.role!r} is neither {SERVER!r} nor a client in --parties ({','.join(names)})")
    if args.client_column:
        raise InputError("--client-column splits one CSV among clients; with --role, --csv is this client's own")
    if args.dataset:
        raise InputError(f"with --role, each {args.method} client gives its own --csv, not --dataset")
    if args.role == SERVER and args.csv is not None:
        raise InputError(f"the {SERVER!r} holds no data: drop --csv")
    if args.role != SERVER and args.csv is None:
        raise InputError(f"client {args.role!r} needs its own data: --csv FILE --label COL")
    if args.method == "fedavg":
        _check_fedavg_args(args)
    elif args.method != "gl":
        _check_chfl_args(args)


def _check_fedavg_args(args: argparse.Namespace) -> None:
    from securefl.data.chfl_clients import parse_classes

    if not args.columns or not args.classes:
        raise InputError("fedavg with --role needs the federation's schema on every party, the server too:"
                         " --columns COL,... (every client's feature columns, in order) --classes A,B,...")
    columns = tuple(c.strip() for c in args.columns.split(","))
    if not all(columns) or len(set(columns)) != len(columns):
        raise InputError(f"--columns must list distinct, non-empty column names, got {args.columns!r}")
    args.columns, args.classes = columns, fedavg_class_order(parse_classes(args.classes))


def fedavg_class_order(classes: tuple[str, ...]) -> tuple[str, ...]:
    """The one-machine FedAvg's order of its label values: by value when every class is a number
    (pandas reads such a label column as numbers), else as text."""
    try:
        return tuple(sorted(classes, key=float))
    except ValueError:
        return tuple(sorted(classes))


def _check_chfl_args(args: argparse.Namespace) -> None:
    from securefl.data.chfl_clients import parse_classes, parse_common

    if args.lrs is not None:
        raise InputError("--lrs runs one federation per rate; with --role give every party the same --lr")
    if not args.features or not args.classes:
        raise InputError(f"{args.method} with --role needs the federation's schema on every party, the server"
                         " too: --features 'common=COL,...' --classes A,B,...")
    args.features = parse_common(args.features, where="with --role")
    args.classes = parse_classes(args.classes)


def run_horizontal_party(args: argparse.Namespace, progress: Progress) -> int:
    """Run the server or this one client, print its line, write its ``--json``; exit status 0."""
    parse_address_early(args)
    if args.method in ("gl", "fedavg"):
        config = replace(gl_config(args, "csv"), secure=args.secure_agg)
        if config.rounds() == 0:
            raise InputError(f"{args.method} with one epoch and --final local averages nothing, so there is nothing"
                             " to run over the network; give --epochs 2 or more, or --final average")
        agree, rounds, wait = _gl_agreed(config), config.rounds(), config.stage_timeout
        if args.method == "fedavg":
            agree = {**agree, "columns": list(args.columns), "classes": list(args.classes)}
    else:
        from securefl.algorithms.chfl import METHOD_HEADS, secagg_config

        config = replace(chfl_config(args), heads=METHOD_HEADS[args.method])
        agree, rounds, wait = _chfl_agreed(config, args), config.rounds, config.timeout
    parties = (SERVER, *args.parties)
    run = {"parties": parties, "agree": agree, "wait": wait}
    if args.role == SERVER:
        secagg = config.secagg() if args.method in ("gl", "fedavg") else secagg_config(config, secure=args.secure_agg)
        return _serve(args, config, rounds, secagg, run)
    client = _gl_client if args.method in ("gl", "fedavg") else _chfl_client
    return client(args, replace(config, progress=progress), run)


def _serve(args: argparse.Namespace, config: Any, rounds: int, secagg: Any, run: dict[str, Any]) -> int:
    from securefl.runtime.federated import averaging_server

    kwargs = {"clients": list(args.parties), "rounds": rounds, "config": secagg}
    result, meter, seconds, peak = run_as(args, run["parties"], averaging_server, kwargs, wait=run["wait"],
                                          agree=run["agree"])
    times, dropped = result["round_seconds"], result["dropped"]
    report = {**_common(args, config, meter, seconds), "role": "server", "metrics": {}, "dropped": dropped,
              "round_seconds": times, "rounds": len(times), "mean_round_seconds": sum(times) / len(times)}
    mode = "masked sums only" if args.secure_agg else "plain averages, --no-secure-agg"
    gone = "".join(f"; {c!r} dropped out in round {r}" for c, r in dropped.items())
    return finish(args, report, f"{args.method} server: {len(times)} rounds averaged for {len(args.parties)}"
                                f" clients ({mode}{gone}) | {report['mean_round_seconds']:.3f} s/round"
                                f" | {_tail(report)}", peak)


def _gl_client(args: argparse.Namespace, config: Any, run: dict[str, Any]) -> int:
    """A GL client (its global layers federated) or a FedAvg client (its whole model, on the schema)."""
    from baselines.gl_baselines import schema_client
    from securefl.algorithms.gl import check_client, gl_client
    from securefl.data.gl_csv import load_client_csv
    from securefl.data.gl_sets import encode_client, split_client

    table = split_client(load_client_csv(args.csv, label=args.label, name=args.role), args.seed)
    if args.method == "fedavg":
        data = schema_client(table, columns=args.columns, classes=args.classes)
        kwargs = {"data": data, "scope": "all", "n_classes": len(args.classes), "config": config}
    else:
        data = encode_client(table)
        kwargs = {"data": data, "scope": "global", "config": config}
    check_client(data, config)
    result, meter, seconds, peak = run_as(args, run["parties"], gl_client, kwargs, wait=run["wait"],
                                          agree=run["agree"])
    report = {**_common(args, config, meter, seconds), "role": "client",
              "metrics": {**result["metrics"], "per_class": result["per_class"]},
              **{k: result[k] for k in ("train_rows", "test_rows", "evaluated_on", "train_seconds")},
              "parameters": result["parameters"], "federated_parameters": result["federated"]}
    m = report["metrics"]
    auroc = f" | AUROC {m['auroc']:.4f}" if m.get("auroc") is not None else ""
    return finish(args, report, f"{args.method} client {args.role!r} (seed {args.seed}): accuracy"
                                f" {m['accuracy']:.4f}{auroc}"
                                f" on {report['test_rows']} test rows | {_tail(report)}", peak)


def _chfl_client(args: argparse.Namespace, config: Any, run: dict[str, Any]) -> int:
    from securefl.algorithms.chfl import chfl_client, secagg_config, summarize
    from securefl.data.chfl_clients import load_client_csv

    data = load_client_csv(args.csv, name=args.role, label=args.label, common=args.features,
                           classes=args.classes, seed=args.seed)
    kwargs = {"server": SERVER, "data": data, "n_classes": len(args.classes), "config": config,
              "secagg": secagg_config(config, secure=args.secure_agg)}
    result, meter, seconds, peak = run_as(args, run["parties"], chfl_client, kwargs, wait=run["wait"],
                                          agree=run["agree"])
    methods = summarize([result])
    report = {**_common(args, config, meter, seconds), "role": "client",
              "metrics": {"accuracy": methods[args.method]["accuracy"],
                          "methods": {m: v["accuracy"] for m, v in methods.items()}},
              "selected": result["selected"], "history": result["history"],
              **{k: result[k] for k in ("train_rows", "val_rows", "test_rows", "unique_features", "train_seconds",
                                        "average_seconds")}}
    return finish(args, report, f"{args.method} client {args.role!r} (seed {args.seed}): accuracy"
                                f" {report['metrics']['accuracy']:.4f} on {report['test_rows']} test rows"
                                f" | {_tail(report)}", peak)


def _gl_agreed(config: Any) -> dict[str, Any]:
    """The settings on which the server's round count and the clients' global layers depend (a
    client's learning rate moves the average every other client loads)."""
    keep = ("seed", "epochs", "batches", "aggregate", "eta", "secure", "federate_bn_stats", "final_average", "shape",
            "lr", "weight_decay")
    return {k: v for k, v in config.settings().items() if k in keep}


def _chfl_agreed(config: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The federation's schema and the settings on which the common column and the round count depend."""
    kept = {k: v for k, v in config.settings().items() if k in ("seed", "rounds", "hidden")}
    return {**kept, "secure": args.secure_agg, "common": list(args.features), "classes": list(args.classes)}


def _common(args: argparse.Namespace, config: Any, meter: Any, seconds: float) -> dict[str, Any]:
    """The result fields every party reports; ``bytes`` is what it sent plus what it received."""
    sent, received = meter.bytes_sent, meter.bytes_received
    shared = ({"federated": "global layers (MLP layers 2-4)"} if args.method == "gl" else
              {"federated": "whole model", "columns": list(args.columns), "classes": list(args.classes)}
              if args.method == "fedavg" else
              {"federated": "the common column", "common_features": list(args.features),
               "classes": list(args.classes)})
    return {"method": args.method, "dataset": "csv", "seed": args.seed, "device": str(config.device),
            "party": args.role, "parties": [SERVER, *args.parties], "seconds": seconds,
            "bytes": sent + received, "bytes_sent": sent, "bytes_received": received,
            "settings": {**config.settings(), "backend": "torch (network)", "peer": args.peer,
                         "authenticated_links": args.identity is not None, **shared,
                         "aggregation": "secure (masked sums)" if args.secure_agg else "plain"}}


def _tail(report: dict[str, Any]) -> str:
    return f"{report['seconds']:.2f} s | {report['bytes_sent']:,} bytes sent, {report['bytes_received']:,} received"


__all__ = ["SERVER", "check_horizontal_args", "fedavg_class_order", "run_horizontal_party"]
