"""``securefl run tdcd``: Tiered Decentralized Coordinate Descent on a registered dataset or a CSV.

The dataset's (or ``--csv``'s) columns are split into ``--silos`` contiguous blocks and each silo's rows
dealt to ``--clients`` clients (per seed, 80% training and 20% test rows); every hub
averages its clients through secure aggregation unless ``--no-secure-agg``. A run of
``--rounds`` communication rounds takes ``--local-steps`` (Q) SGD steps of
``--batch-size`` rows per client between them. Regression datasets train a ridge model
(``--l2``), MNIST the paper's CNN per silo. ``--csv FILE --id-column COL --label COL``
runs on a table of your own: ridge regression on a numeric label, or with ``--classes
A,B,...`` a linear softmax block per silo. With ``--role`` each hub and client runs on
its own (:mod:`securefl.commands.run_network_tdcd`).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from protocols.errors import InputError

EXAMPLE = "securefl run tdcd --dataset tdcd_pol --silos 4 --clients 5 --local-steps 10 --rounds 50"
DEFAULT_ROUNDS, DEFAULT_BATCH = 50, 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The TDCD-only options of ``securefl run`` (it also reads --clients, --rounds, --batch-size, --lr)."""
    g = p.add_argument_group("tdcd (silos of clients; --clients is the clients per silo)")
    g.add_argument("--silos", type=int, default=2, help="TDCD: silos, each a block of the columns (default 2)")
    g.add_argument("--local-steps", type=int, default=4, help="TDCD: Q, SGD steps per round (default 4)")
    g.add_argument("--l2", type=float, default=0.01, help="TDCD: L2 weight of the objective (default 0.01)")
    g.add_argument("--eval-every", type=int, default=1,
                   help="TDCD: compute the training objective every N rounds (0: only at the end; default 1)")


def check_args(args: argparse.Namespace) -> None:
    """One-line errors for TDCD's options, before any data is read."""
    for name in ("silos", "local_steps"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.l2 < 0:
        raise InputError(f"--l2 must be >= 0, got {args.l2}")
    if args.eval_every < 0:
        raise InputError(f"--eval-every must be >= 0, got {args.eval_every}")
    if args.clients < 1:
        raise InputError(f"--clients must be at least 1, got {args.clients}")
    if args.classes is not None:
        from securefl.data.chfl_clients import parse_classes

        args.classes = parse_classes(args.classes)


def main(args: argparse.Namespace, progress: Callable[[argparse.Namespace, str], Any]) -> int:
    """``securefl run tdcd``: every silo here, or with ``--role`` one hub or client; exit status 0.
    ``progress(args, label)`` makes the progress callback."""
    from securefl.results import write_json_atomically

    check_args(args)
    if args.role is not None:
        from securefl.commands.run_network_tdcd import run_tdcd_party

        return run_tdcd_party(args, tdcd_config(args, progress=None), progress(args, f"{args.role}: tdcd rounds"))
    from securefl.runtime import GPUPeak

    with GPUPeak.of_run(args.device, args.backend) as peak:
        result = run_tdcd_command(args, progress(args, "tdcd rounds"))
    peak.into(result)
    print(summary_line(result))
    if args.json:
        write_json_atomically(args.json, result)
    return 0


def run_tdcd_command(args: argparse.Namespace, progress: Callable[[int, int], None] | None) -> dict[str, Any]:
    """Load, split and run; the result object (DESIGN), with the objective per evaluated round."""
    from securefl.algorithms.tdcd_hub import run_tdcd
    from securefl.data.registry import load_registered
    from securefl.data.tdcd_entries import TDCD_DEFAULT
    from securefl.data.tdcd_sets import tiered_split

    if args.csv is not None:
        table = csv_table(args.csv, id_column=args.id_column, label=args.label, classes=args.classes)
    else:
        name = args.dataset or TDCD_DEFAULT
        table = replace(load_registered(name, kind="tdcd", data_dir=args.data_dir), name=name)
    split = tiered_split(table, silos=args.silos, clients=args.clients, seed=args.seed)
    return run_tdcd(split, tdcd_config(args, progress=progress), backend=args.backend)


def csv_table(path: Path, *, id_column: str, label: str, classes: Sequence[str] | None) -> Any:
    """A user's whole table (the rows every client file would hold, joined) as a TieredTable: its
    numeric columns but ``id_column`` are the features; ``label`` a number, or one of ``classes``."""
    from securefl.data.tdcd_clients import load_client_csv
    from securefl.data.tdcd_sets import TieredTable

    rows = load_client_csv(path, name="csv", id_column=id_column, label=label, classes=classes)
    task = "classification" if classes else "regression"
    return TieredTable(Path(path).stem, task, rows.x, rows.y, n_classes=len(classes or ()))


def tdcd_config(args: argparse.Namespace, *, progress: Callable[[int, int], None] | None) -> Any:
    """The TDCDConfig the arguments give."""
    from securefl.algorithms.tdcd import TDCDConfig

    return TDCDConfig(rounds=args.rounds or DEFAULT_ROUNDS, local_steps=args.local_steps,
                      batch_size=args.batch_size or DEFAULT_BATCH, lr=args.lr, l2=args.l2, secure=args.secure_agg,
                      eval_every=args.eval_every, seed=args.seed, device=args.device, progress=progress)


def summary_line(result: dict[str, Any]) -> str:
    """The last line a TDCD run prints: the test metric, the objective's path, time and bytes."""
    metrics, history, settings = result["metrics"], result["history"], result["settings"]
    test = (f"test RMSE {metrics['rmse']:.4g}" if "rmse" in metrics else f"test accuracy {metrics['accuracy']:.4f}")
    return (f"tdcd on {result['dataset']} (seed {result['seed']}, {settings['silos']} silos x"
            f" {settings['clients_per_silo']} clients, {settings['aggregation']} aggregation): {test} | training"
            f" objective {history[0]['objective']:.4g} -> {history[-1]['objective']:.4g} | {result['seconds']:.2f} s"
            f" | {result['bytes']:,} bytes ({result['bytes_by_purpose']['evaluation']:,} for evaluation)")


__all__ = ["EXAMPLE", "add_arguments", "check_args", "csv_table", "main", "run_tdcd_command", "summary_line",
           "tdcd_config"]
