"""``securefl run`` for the horizontal methods: CHFL and GL and their baselines.

CHFL family (features split into common and per-client unique ones):
``chfl``, ``common``, ``simple``, ``local`` on ``--dataset covertype|digits|...`` or
``--csv FILE --label COL`` with ``--features 'common=a,b;unique=c|d'`` or a random
split (``--clients``, ``--common-ratio``); natural clients (``chfl``, ``common``,
``simple``, and ``local`` given ``--features``): ``--csv FILE --client-column COL
--features 'common=a,b'``, each client's other columns its unique features. GL family
(natural clients with their own columns and classes): ``gl``, ``fedavg``, ``local``,
``centralized`` on ``--dataset gl_covertype|gl_heart`` or ``--csv FILE --label COL
--client-column COL``.
Every model average runs through secure aggregation unless ``--no-secure-agg``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Callable

from protocols.errors import InputError

CHFL_METHODS = ("chfl", "common", "simple")
GL_METHODS = ("gl", "fedavg")
SHARED_METHODS = ("local", "centralized")
HORIZONTAL_METHODS = (*CHFL_METHODS, *GL_METHODS, "local")
DEFAULT_DATASET = {"chfl": "digits", "gl": "gl_heart"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The horizontal-only options of ``securefl run``."""
    g = p.add_argument_group("horizontal methods (chfl, common, simple, gl, fedavg, local)")
    g.add_argument("--csv", type=Path, default=None, metavar="FILE",
                   help="your own data: one CSV, every row one sample")
    g.add_argument("--client-column", help="GL, and CHFL with --features 'common=...': the column naming each"
                                          " row's client (natural clients)")
    g.add_argument("--features", metavar="SPEC",
                   help="CHFL: 'common=a,b;unique=c,d|e,f' (one |-separated group of unique columns per client);"
                        " with --client-column or --role, 'common=a,b' (each client's other columns are unique)")
    g.add_argument("--classes", metavar="LIST",
                   help="CHFL and FedAvg with --role, TDCD with --csv: every class value of the federation,"
                        " comma-separated, on every party (TDCD: classification instead of regression)")
    g.add_argument("--columns", metavar="LIST",
                   help="FedAvg with --role: the union of the clients' feature columns, in order, on every party"
                        " (each client pads the ones it lacks with zeros)")
    g.add_argument("--clients", type=int, default=5, help="CHFL: clients of a random feature split (default 5)")
    g.add_argument("--common-ratio", type=float, default=0.3, help="CHFL: share of common features (default 0.3)")
    g.add_argument("--feature-seed", type=int, default=None, help="CHFL: the random feature split (default: --seed)")
    g.add_argument("--lrs", metavar="LIST", default=None,
                   help="CHFL: comma-separated Adam rates; each client keeps, per method, the one its own "
                        "validation rows prefer (one run per rate; replaces --lr)")
    g.add_argument("--mus", metavar="LIST", default=None,
                   help="CHFL: comma-separated mu > 0 values in (0, 1]; each client keeps the one its own "
                        "validation rows prefer (default: CHFLConfig's 0.1,0.25,0.5,1)")
    g.add_argument("--rounds", type=int, default=None,
                   help="communication rounds (CHFL: T, default 20; GL: epochs, as --epochs)")
    g.add_argument("--batches", type=int, default=None, help="GL: batches per local epoch (paper default)")
    g.add_argument("--aggregate", choices=("epoch", "batch"), default="epoch",
                   help="GL: average once per epoch (the authors' code) or after every batch (Algorithm 1)")
    g.add_argument("--eta", type=float, default=None,
                   help="GL/FedAvg with --aggregate batch: Algorithm 1's update rate, omega_k <- eta omega_k +"
                        " (1 - eta) omega after each batch's average (default 1: keep one's own until the next"
                        " epoch's broadcast; 0: per-batch FedAvg)")
    # default None: GLConfig's default applies (securefl.algorithms.gl.switches); not imported here,
    # as it imports torch, so the help names it and a test checks the two agree
    g.add_argument("--bn-stats", choices=("averaged", "local"), default=None,
                   help="GL/FedAvg: batch-norm running statistics of federated layers averaged with them "
                        "or kept by each client (default: averaged)")
    g.add_argument("--final", choices=("average", "local"), default=None,
                   help="GL/FedAvg: evaluate clients with their own last-round weights (Algorithm 1 as "
                        "written) or with the last round's average (default: local)")
    g.add_argument("--select", choices=("last", "val_loss", "val_auroc"), default="last",
                   help="GL family: evaluate each client with its last epoch's weights (default) or those of"
                        " the epoch its validation rows score best (needs a table split per seed, e.g. heart)")
    g.add_argument("--secure-agg", action=argparse.BooleanOptionalAction, default=True,
                   help="average through secure aggregation (default) or in clear, for timing")


def family(args: argparse.Namespace, kind_of: Callable[[str], str]) -> str:
    """"vertical", "chfl", "gl" or "tdcd": which method family and data ``args`` name; InputError on a mismatch."""
    if args.method in CHFL_METHODS or args.method in GL_METHODS or args.method == "local":
        wanted = "chfl" if args.method in CHFL_METHODS else "gl" if args.method in GL_METHODS else None
    elif args.method == "tdcd":
        wanted = "tdcd"
    else:
        wanted = "vertical" if args.method != "centralized" else None
    if args.party_csv:
        have = "vertical"
    elif args.csv is not None and args.method == "tdcd":  # one client's own rows (with --role)
        have = "tdcd"
    elif args.csv is not None:  # natural clients (or, with --role, the one client whose CSV it is): GL or CHFL
        natural = args.client_column or getattr(args, "role", None)
        chfl = args.method in CHFL_METHODS or (args.method == "local" and args.features)  # CHFL's Local
        have = "gl" if natural and not chfl else "chfl"
    elif args.dataset:
        have = kind_of(args.dataset)
    else:
        have = wanted or ("chfl" if args.method == "local" else "vertical")
    if wanted is not None and have != wanted:
        raise InputError(f"method {args.method!r} needs {_needs(wanted)}, not {_source(args, have)}")
    if args.method == "centralized" and have == "chfl":
        raise InputError("method 'centralized' runs on vertical datasets and gl_covertype, not on CHFL data")
    if args.method == "local" and have == "vertical":
        raise InputError(f"method 'local' needs {_needs('chfl')} or {_needs('gl')}, not {_source(args, have)}")
    return have


def _needs(kind: str) -> str:
    return {"chfl": "a CHFL dataset (--dataset covertype|digits|...) or --csv (with --features 'common=...')",
            "gl": "a GL dataset (--dataset gl_covertype|gl_heart) or --csv with --client-column",
            "vertical": "a vertical dataset (--dataset breast|...) or --party-csv",
            "tdcd": "a TDCD dataset (--dataset diabetes_sklearn|tdcd_pol|tdcd_elevators|tdcd_kegg|mnist)"}[kind]


def _source(args: argparse.Namespace, kind: str) -> str:
    where = f"--dataset {args.dataset}" if args.dataset else "--csv" if args.csv else "--party-csv"
    return f"{where} ({kind} data)"


def check_args(args: argparse.Namespace) -> None:
    """One-line errors for the horizontal options (``--lrs`` is parsed in place)."""
    for name in ("rounds", "batches"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InputError(f"--{name} must be at least 1, got {value}")
    if args.clients < 2 and args.method != "tdcd":  # TDCD's --clients is per silo: one is Fig. 2c's K=1
        raise InputError(f"--clients must be at least 2 (federation needs two clients), got {args.clients}")
    if not 0 < args.common_ratio < 1:
        raise InputError(f"--common-ratio must be between 0 and 1, got {args.common_ratio}")
    if args.csv is not None and args.party_csv:
        raise InputError("--csv (horizontal data) and --party-csv (vertical data) cannot be combined")
    if args.csv is not None and args.dataset:
        raise InputError(f"--csv and --dataset {args.dataset} both name the data; give one")
    if None not in (args.epochs, args.rounds) and args.epochs != args.rounds:  # each stands for the other
        raise InputError(f"--epochs {args.epochs} and --rounds {args.rounds} disagree; give one")
    if args.mus is not None:
        args.mus = _number_list("--mus", "distinct values in (0, 1]", args.mus, lambda v: 0 < v <= 1)
    if args.lrs is not None:  # which methods take it: run_options.SCOPE
        args.lrs = parse_lrs(args.lrs)


def parse_lrs(text: str) -> tuple[float, ...]:
    """``--lrs``: distinct positive learning rates separated by commas, ascending."""
    return _number_list("--lrs", "distinct positive learning rates", text, lambda v: v > 0)


def _number_list(option: str, what: str, text: str, valid: Callable[[float], bool]) -> tuple[float, ...]:
    """Comma-separated distinct finite ``valid`` numbers, ascending; else InputError naming ``option``."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not math.isfinite(v) or not valid(v) for v in values) or len(set(values)) != len(values):
        raise InputError(f"{option} must list {what} separated by commas, got {text!r}")
    return tuple(sorted(values))


def run_chfl_family(args: argparse.Namespace, progress: Any) -> dict[str, Any]:
    """Load and partition the data, then run the CHFL-family method."""
    from securefl.algorithms.chfl import run_chfl_method
    from securefl.algorithms.chfl_tuning import run_chfl_tuned

    partition, config = _chfl_partition(args), chfl_config(args)
    if args.lrs is not None:
        return run_chfl_tuned(args.method, partition, config, lrs=args.lrs, secure_agg=args.secure_agg,
                              backend=args.backend, progress=progress)
    return run_chfl_method(args.method, partition, config, secure_agg=args.secure_agg, backend=args.backend,
                           progress=progress)


def _chfl_partition(args: argparse.Namespace) -> Any:
    """The CHFL clients the arguments name: natural ones (``--client-column``) or a partition of one table."""
    from securefl.data.chfl_clients import load_csv_partition, parse_common
    from securefl.data.chfl_sets import chfl_partition, load_chfl_dataset, load_csv_dataset, parse_feature_spec

    if args.client_column:
        if not args.features:
            raise InputError("--client-column with chfl, common or simple needs the common columns:"
                             " --features 'common=COL,COL' (each client's other columns are its unique ones)")
        common = parse_common(args.features, where="with --client-column")
        return load_csv_partition(args.csv, label=args.label, client_column=args.client_column, common=common,
                                  seed=args.seed)
    spec = parse_feature_spec(args.features) if args.features else None
    if args.csv is not None:
        named = None if spec is None else [*spec.common, *(c for group in spec.unique for c in group)]
        dataset = load_csv_dataset(args.csv, label=args.label, columns=named)
    else:
        dataset = load_chfl_dataset(args.dataset or DEFAULT_DATASET["chfl"], data_dir=args.data_dir)
    return chfl_partition(dataset, n_clients=args.clients, common_ratio=args.common_ratio,
                          feature_seed=args.seed if args.feature_seed is None else args.feature_seed,
                          sample_seed=args.seed, spec=spec)


def chfl_config(args: argparse.Namespace) -> Any:
    """The CHFLConfig the arguments give (20 rounds, batch 64 and CHFLConfig's mu grid by default)."""
    from securefl.algorithms.chfl import CHFLConfig

    return CHFLConfig(rounds=args.rounds or args.epochs or 20, batch_size=args.batch_size or 64, lr=args.lr,
                      seed=args.seed, device=args.device, **({"mus": args.mus} if args.mus else {}))


def gl_config(args: argparse.Namespace, dataset: str) -> Any:
    """The GLConfig the arguments give for ``dataset`` (the paper's schedule and widths where it has them)."""
    from securefl.algorithms.gl import paper_config, switches

    overrides: dict[str, Any] = {"seed": args.seed, "device": args.device, "lr": args.lr,
                                 "aggregate": args.aggregate, "select": args.select,
                                 **({"eta": args.eta} if args.eta is not None else {}),
                                 **switches(bn_stats=args.bn_stats, final=args.final)}
    epochs = args.epochs or args.rounds
    if epochs:
        overrides["epochs"] = epochs
    if args.batches:
        overrides["batches"] = args.batches
    return paper_config(dataset, **overrides)


def run_gl_family(args: argparse.Namespace, progress: Any) -> dict[str, Any]:
    """Load the clients' tables, then run the GL-family method."""
    from baselines.gl_baselines import run_gl_method
    from securefl.data.gl_csv import load_csv_clients
    from securefl.data.registry import load_registered

    if args.csv is not None:
        dataset = load_csv_clients(args.csv, label=args.label, client_column=args.client_column)
    else:
        dataset = load_registered(args.dataset or DEFAULT_DATASET["gl"], kind="gl", data_dir=args.data_dir)
    # a user's CSV takes the default settings whatever its file is called (a file named gl_heart.csv
    # must not switch to heart's schedule and widths), as each --role client's run does
    config = gl_config(args, "csv" if args.csv is not None else dataset.name)
    if args.method in ("gl", "fedavg") and config.rounds() == 0:
        print(f"note: {args.method} with one epoch and --final local sends no round (its only average would go "
              "unused), so it trains like local; --final average federates that round", file=sys.stderr)
    return run_gl_method(args.method, dataset, config, secure_agg=args.secure_agg, backend=args.backend,
                         progress=progress)


def summary_line(args: argparse.Namespace, result: dict[str, Any]) -> str:
    """The last line a horizontal run prints: mean client accuracy, time, bytes and aggregation mode."""
    metrics = result["metrics"]
    extra = f" | AUROC {metrics['auroc']:.4f}" if "auroc" in metrics else ""
    rounds = result.get("round_seconds") or []
    per_round = f" | {sum(rounds) / len(rounds):.3f} s/round" if rounds else ""
    mode = "no" if args.method in SHARED_METHODS else "secure" if args.secure_agg else "plain"  # nothing averaged
    tuned = f" | lr per client: {_rates(result['chosen_lr'])}" if "chosen_lr" in result else ""
    return (f"{args.method} on {result['dataset']} (seed {args.seed}, {mode} aggregation): mean client accuracy"
            f" {metrics['accuracy']:.4f}{extra} | {result['seconds']:.2f} s{per_round} | {result['bytes']:,} bytes"
            f"{tuned}")


def _rates(chosen: dict[str, float]) -> str:
    """Each client's chosen learning rate, ``c0 0.001, c1 0.003``."""
    return ", ".join(f"{client} {lr:g}" for client, lr in chosen.items())


__all__ = ["CHFL_METHODS", "GL_METHODS", "HORIZONTAL_METHODS", "add_arguments", "check_args", "chfl_config",
           "family", "gl_config", "parse_lrs", "run_chfl_family", "run_gl_family", "summary_line"]
