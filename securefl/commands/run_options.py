"""Which ``securefl run`` options each method and data family uses.

``securefl run`` takes the options of every method in one parser, so a method
would otherwise ignore the ones that are not its own without a word: ``--rounds``
for STFL, ``--vae-epochs`` for Centralized, ``--no-secure-agg`` for a vertical
method, ``--batch-size`` for GL (whose epochs are a fixed number of batches). An
option set to anything but its default for a method that does not use it is a
one-line error instead. An option given at its default value changes nothing, so it
passes. The run-mode switches stay lenient where a loop over methods would pass
them to all: ``--backend`` (Centralized and Hierarchical simply have no parties to
spread) and ``--no-secure-agg`` for Local (which averages nothing).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from protocols.errors import InputError

Applies = Callable[[argparse.Namespace, str], bool]
"""(args, data family "vertical" | "chfl" | "gl" | "tdcd") -> whether the option is used."""

SCOPE: dict[str, tuple[str, Applies]] = {
    "vae_epochs": ("stfl", lambda a, kind: a.method == "stfl"),
    "latent": ("stfl", lambda a, kind: a.method == "stfl"),
    "latent_seed": ("stfl with --latent sample", lambda a, kind: a.method == "stfl" and a.latent == "sample"),
    "he": ("he-vfl", lambda a, kind: a.method == "he-vfl"),
    "passive_seed": ("he-vfl", lambda a, kind: a.method == "he-vfl"),
    "share_seed": ("he-vfl", lambda a, kind: a.method == "he-vfl"),
    "activation_bound": ("he-vfl", lambda a, kind: a.method == "he-vfl"),
    "cuda_graphs": ("stfl, hierarchical and centralized on a CUDA --device",
                    lambda a, kind: kind == "vertical" and a.method != "he-vfl" and a.device.startswith("cuda")),
    "all_data": ("the vertical methods but stfl, whose passive parties pretrain on the self-taught rows",
                 lambda a, kind: kind == "vertical" and a.method != "stfl"),
    "lrs": ("the CHFL family (chfl, common, simple, local) on CHFL data", lambda a, kind: kind == "chfl"),
    "epochs": ("every method but tdcd (which counts --rounds)", lambda a, kind: kind != "tdcd"),
    "id_column": ("--party-csv, and --csv with tdcd", lambda a, kind: bool(a.party_csv)
                  or (kind == "tdcd" and a.csv is not None)),
    "label": ("--party-csv or --csv", lambda a, kind: bool(a.party_csv) or a.csv is not None),
    "lr": ("runs without --lrs (which tries each of its rates instead)", lambda a, kind: a.lrs is None),
    "batch_size": ("the vertical, CHFL-family and TDCD methods (GL runs a fixed number of batches per epoch: "
                   "--batches)", lambda a, kind: kind in ("vertical", "chfl", "tdcd")),
    "client_column": ("--csv with the GL family, or with chfl, common and simple",
                      lambda a, kind: kind in ("gl", "chfl") and a.csv is not None),
    "classes": ("chfl, common, simple and fedavg with --role, and tdcd with --role or --csv",
                lambda a, kind: ((kind in ("chfl", "tdcd") or a.method == "fedavg") and a.role is not None)
                or (kind == "tdcd" and a.csv is not None)),
    "columns": ("fedavg with --role", lambda a, kind: a.method == "fedavg" and a.role is not None),
    "features": ("the CHFL family", lambda a, kind: kind == "chfl"),
    "clients": ("a random CHFL feature split, and tdcd (clients per silo)",
                lambda a, kind: (kind == "chfl" and not a.features) or (kind == "tdcd" and a.role is None)),
    "common_ratio": ("a random CHFL feature split", lambda a, kind: kind == "chfl" and not a.features),
    "feature_seed": ("a random CHFL feature split", lambda a, kind: kind == "chfl" and not a.features),
    "mus": ("chfl (the only method with lateral connections)", lambda a, kind: a.method == "chfl"),
    "rounds": ("the horizontal methods and tdcd", lambda a, kind: kind in ("chfl", "gl", "tdcd")),
    "batches": ("the GL family", lambda a, kind: kind == "gl"),
    "aggregate": ("the GL family", lambda a, kind: kind == "gl"),
    "eta": ("gl and fedavg", lambda a, kind: kind == "gl" and a.method in ("gl", "fedavg")),
    "bn_stats": ("gl and fedavg", lambda a, kind: kind == "gl" and a.method in ("gl", "fedavg")),
    "final": ("gl and fedavg", lambda a, kind: kind == "gl" and a.method in ("gl", "fedavg")),
    "select": ("the GL family", lambda a, kind: kind == "gl"),
    "secure_agg": ("the horizontal methods and tdcd", lambda a, kind: kind in ("chfl", "gl", "tdcd")),
    "silos": ("tdcd without --role (with it, --parties names the silos)",
              lambda a, kind: kind == "tdcd" and a.role is None),
    "local_steps": ("tdcd", lambda a, kind: kind == "tdcd"),
    "l2": ("tdcd", lambda a, kind: kind == "tdcd"),
    "eval_every": ("tdcd", lambda a, kind: kind == "tdcd"),
}


def flag(dest: str, value: Any) -> str:
    """The option as a user types it: ``--vae-epochs``, ``--no-secure-agg``."""
    name = dest.replace("_", "-")
    return f"--no-{name}" if value is False else f"--{name}"


def check_scope(args: argparse.Namespace, kind: str, default: Callable[[str], Any]) -> None:
    """InputError naming the first option set away from its ``default`` that ``args.method`` on
    ``kind`` data would ignore."""
    for dest, (scope, applies) in SCOPE.items():
        value = getattr(args, dest)
        if value != default(dest) and not applies(args, kind):
            raise InputError(f"{flag(dest, value)} applies to {scope}, not to {args.method!r} "
                             f"on {kind} data; drop it")


__all__ = ["SCOPE", "check_scope", "flag"]
