"""``securefl run tdcd --role NAME --parties 'HUB=CLIENT,...;HUB=...'``: each hub and client on its own.

``--parties`` names the silos in order, each hub with its clients; the first hub listens
at ``--peer``. A client gives its own CSV (``--csv FILE --id-column id --label y``: the
samples it holds, its silo's feature columns and the target); a hub gives no data. The
hubs check, by digest, that every silo holds the same samples and draw the split from
``--seed`` (:mod:`securefl.algorithms.tdcd_network`); the parties compare the silos and
the settings that must agree when they meet. Ridge regression on a numeric ``--label``,
or, with ``--classes A,B,...`` given to every party, classification (a linear softmax
model per silo) on a label holding those values
(:func:`securefl.data.tdcd_clients.load_client_csv`).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from protocols.errors import InputError
from securefl.commands.run_network import finish, parse_address_early, run_as

Silos = tuple[tuple[str, tuple[str, ...]], ...]


def parse_silos(text: str) -> Silos:
    """``'bank=branch_a,branch_b;shop=store_1'`` -> ((hub, clients), ...); InputError naming the flaw."""
    silos = []
    for part in text.split(";"):
        hub, sep, clients = part.partition("=")
        names = tuple(c.strip() for c in clients.split(","))
        if not sep or not hub.strip() or not all(names):
            raise InputError(f"--parties for tdcd is 'HUB=CLIENT,CLIENT;HUB=CLIENT,...', got {text!r}")
        silos.append((hub.strip(), names))
    everyone = [name for hub, clients in silos for name in (hub, *clients)]
    if len(set(everyone)) != len(everyone):
        raise InputError(f"--parties names a party twice: {text!r}")
    sizes = [len(names) for _, names in silos]
    if len(set(sizes)) != 1:
        raise InputError(f"--parties: every silo needs the same number of clients (the minibatch is --batch-size"
                         f" per client), got {sizes}")
    return tuple(silos)


def check_tdcd_network_args(args: argparse.Namespace) -> None:
    """One-line InputErrors for one TDCD party's options; ``args.silos_spec`` is set on success."""
    if args.parties == args.option_default("parties"):
        raise InputError("tdcd with --role needs --parties 'HUB=CLIENT,...;HUB=CLIENT,...' (every silo's hub"
                         " and clients, the same on every machine)")
    args.silos_spec = parse_silos(",".join(args.parties))
    hubs = [hub for hub, _ in args.silos_spec]
    clients = [c for _, names in args.silos_spec for c in names]
    if args.role not in (*hubs, *clients):
        raise InputError(f"--role {args.role!r} is neither a hub ({', '.join(hubs)}) nor a client in --parties")
    if args.dataset:
        raise InputError("with --role, each tdcd client gives its own --csv, not --dataset")
    if args.role in hubs and args.csv is not None:
        raise InputError(f"hub {args.role!r} holds no data: drop --csv")
    if args.role in clients and args.csv is None:
        raise InputError(f"client {args.role!r} needs its own rows: --csv FILE --id-column COL --label COL")


def run_tdcd_party(args: argparse.Namespace, config: Any, progress: Callable[[int, int], None] | None) -> int:
    """Run this hub or client, print its line, write its ``--json``; exit status 0."""
    from dataclasses import replace

    from securefl.algorithms.tdcd_network import client_party, hub_party
    from securefl.data.tdcd_clients import load_client_csv

    parse_address_early(args)
    silos: Silos = args.silos_spec
    hubs = tuple(hub for hub, _ in silos)
    config = replace(config, progress=progress)
    j = next(i for i, (hub, clients) in enumerate(silos) if args.role in (hub, *clients))
    classes = args.classes or ()
    if args.role in hubs:
        role, kwargs = hub_party, {"silo": j, "clients": silos[j][1], "hubs": hubs, "config": config}
    else:
        rows = load_client_csv(args.csv, name=args.role, id_column=args.id_column, label=args.label,
                               classes=classes or None)
        role, kwargs = client_party, {"hub": silos[j][0], "silo": j, "last": j == len(silos) - 1, "rows": rows,
                                      "clients": len(silos[j][1]), "config": config}
    kwargs["n_classes"] = len(classes)
    parties = (*hubs, *(c for _, clients in silos for c in clients))
    agree = {"silos": [[hub, list(clients)] for hub, clients in silos], "classes": list(classes),
             **{k: v for k, v in config.settings().items() if k != "device"}}
    result, meter, seconds, peak = run_as(args, parties, role, kwargs, wait=config.stage_timeout, agree=agree)
    report = _report(args, result, meter, seconds, config, hub=args.role in hubs)
    return finish(args, report, _line(args, report), peak)


def _report(args: argparse.Namespace, party: dict[str, Any], meter: Any, seconds: float, config: Any, *,
            hub: bool) -> dict[str, Any]:
    sent, received = meter.bytes_sent, meter.bytes_received
    report: dict[str, Any] = {
        "method": "tdcd", "dataset": "csv", "seed": args.seed, "device": str(config.device),
        "role": "hub" if hub else "client", "party": args.role, "seconds": seconds, "bytes": sent + received,
        "bytes_sent": sent, "bytes_received": received, "metrics": {},
        "settings": {**config.settings(), "silos": [[h, list(c)] for h, c in args.silos_spec],
                     "task": "classification" if args.classes else "regression",
                     **({"classes": list(args.classes)} if args.classes else {}),
                     "backend": "torch (network)", "peer": args.peer,
                     "authenticated_links": args.identity is not None}}
    if hub:  # every hub computes the federation's objective and test loss
        from securefl.algorithms.tdcd_hub import masks_exchange, test_metrics

        report["settings"]["hub_exchange"] = ("masked peer sum" if masks_exchange(config, len(args.silos_spec))
                                              else "clear")

        report["metrics"] = test_metrics(party, report["settings"]["task"])
        report["history"] = party["history"]
    else:
        report.update({"train_rows": party["train_rows"], "test_rows": party["test_rows"]})
    return report


def _line(args: argparse.Namespace, report: dict[str, Any]) -> str:
    tail = f"{report['seconds']:.2f} s | {report['bytes_sent']:,} bytes sent, {report['bytes_received']:,} received"
    if report["role"] == "hub":
        history, metrics = report["history"], report["metrics"]
        test = f"test RMSE {metrics['rmse']:.4g}" if "rmse" in metrics else f"test accuracy {metrics['accuracy']:.4f}"
        return (f"tdcd hub {args.role!r} (seed {args.seed}): {test} | training objective"
                f" {history[0]['objective']:.4g} -> {history[-1]['objective']:.4g} | {tail}")
    return (f"tdcd client {args.role!r}: trained on {report['train_rows']} rows, {report['test_rows']} test rows"
            f" | {tail}")


__all__ = ["check_tdcd_network_args", "parse_silos", "run_tdcd_party"]
