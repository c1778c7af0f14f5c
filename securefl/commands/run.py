"""``securefl run METHOD``: train one method on one dataset and report accuracy, time and bytes.

Horizontal methods (CHFL, GL and their baselines) are described in
:mod:`securefl.commands.run_horizontal`, TDCD in :mod:`securefl.commands.run_tdcd`.
Vertical methods (the STFL paper's comparison): ``stfl``, ``he-vfl``,
``hierarchical``, ``centralized``. The data is a registered dataset
(``--dataset``) or one CSV per party (``--party-csv``, with ``--id-column`` and
``--label``; the file holding the label column is the active party). Rows are
split per seed into 40% self-taught, 40% train and 20% test as in the paper;
``--all-data`` moves the self-taught rows into training (not for STFL, whose
passive parties pretrain on them).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from protocols.errors import InputError
from securefl.data import stfl_split
from securefl.commands.run_horizontal import (HORIZONTAL_METHODS, add_arguments, check_args, family,
                                              run_chfl_family, run_gl_family, summary_line)
from securefl.commands import run_network, run_tdcd
from securefl.commands.run_options import check_scope
from securefl.results import check_apart, check_distinct_inputs, check_output, write_json_atomically

VERTICAL_METHODS = ("stfl", "he-vfl", "hierarchical", "centralized")
EXAMPLE = "securefl run stfl --dataset breast --seed 0 --json stfl.json"
DESCRIPTION = """\
Train one method on one dataset; print its accuracy, time and bytes (--json FILE
writes them all).

  vertical (the STFL paper):  stfl, he-vfl, hierarchical, centralized
      data: --dataset NAME, or --party-csv FILE ... with --id-column and --label
      (the file holding the label is the active party); rows split per seed into
      40% self-taught, 40% train, 20% test
  horizontal, CHFL family:    chfl, common, simple, local
      data: --dataset NAME, or --csv FILE --label COL with --features SPEC or a
      random split (--clients, --common-ratio), or natural clients
      (--client-column COL --features 'common=a,b')
  horizontal, GL family:      gl, fedavg, local, centralized
      data: --dataset NAME, or --csv FILE --label COL --client-column COL
  silos of clients (TDCD):    tdcd
      data: --dataset NAME, or --csv FILE --id-column COL --label COL; --silos
      blocks of columns, --clients clients per silo

Each option applies only where its help says; one set away from its default for a
method that does not use it is a one-line error. With --role each party runs on its
own machine (see below)."""
HORIZONTAL_EXAMPLES = ("  CHFL: securefl run chfl --dataset covertype --rounds 20 --no-secure-agg\n"
                       "  GL:   securefl run gl --dataset gl_heart --seed 3 --json gl.json\n"
                       "  own data: securefl run gl --csv sites.csv --label y --client-column site\n"
                       "            securefl run chfl --csv sites.csv --label y --client-column site"
                       " --features 'common=age,bmi'")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("run", help="train one method on one dataset",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog=f"example: {EXAMPLE}\n  own data: securefl run stfl --party-csv bank.csv"
                                     f" shop.csv --id-column id --label y\n{HORIZONTAL_EXAMPLES}\n"
                                     f"  TDCD: {run_tdcd.EXAMPLE}\n"
                                     f"  one party per machine: {run_network.EXAMPLE}")
    p.add_argument("method", choices=(*VERTICAL_METHODS, *HORIZONTAL_METHODS, "tdcd"))
    data = p.add_mutually_exclusive_group()
    data.add_argument("--dataset", help="a registered dataset (default: breast_sklearn, bundled)")
    data.add_argument("--party-csv", nargs="+", type=Path, metavar="CSV", help="one CSV per party")
    p.add_argument("--id-column", default="id", help="ID column of the party CSVs (default: id)")
    p.add_argument("--label", default="y", help="label column; its file is the active party (default: y)")
    p.add_argument("--data-dir", type=Path, help="folder of dataset files (default: $SECUREFL_DATA)")
    p.add_argument("--seed", type=int, default=0, help="split, initialisation and batch order (not crypto)")
    p.add_argument("--epochs", type=int, default=None,
                   help="training epochs (vertical default 100; GL: the paper's, 105 covertype / 10 heart)")
    p.add_argument("--vae-epochs", type=int, default=None, help="STFL: VAE pretraining epochs (default: --epochs)")
    p.add_argument("--batch-size", type=int, default=None, help="vertical default 128, CHFL 64")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--latent", choices=("sample", "mean"), default="sample",
                   help="STFL: what a passive party sends for a row, one posterior draw (default: the paper's"
                        " 'latent vector z') or its posterior mean (more accurate, gives more away)")
    p.add_argument("--latent-seed", type=int, default=None,
                   help="STFL with sampled latents: seed of the passive parties' draws, to repeat a run"
                        " (default: drawn from the OS, so that the active party cannot recompute the noise)")
    p.add_argument("--he", choices=("ckks", "paillier"), default="ckks", help="HE-VFL: encryption scheme")
    p.add_argument("--passive-seed", type=int, default=None,
                   help="HE-VFL: seed of the passive party's share of the initial interactive weights, to"
                        " repeat a run (default: drawn from the OS, so that the active party cannot know it)")
    p.add_argument("--share-seed", type=int, default=None,
                   help="HE-VFL: seed of the active party's share of the initial interactive weights, to"
                        " repeat a run (default: drawn from the OS, so that the passive party cannot know it)")
    p.add_argument("--activation-bound", type=float, default=None,
                   help="HE-VFL: public bound on the passive party's bottom-model activations, which the"
                        " encryption is set up for (default 64; 512 for give_credit, whose features are heavy-tailed)")
    p.add_argument("--all-data", action="store_true", help="train on self-taught + train rows (not STFL)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] for model computation")
    p.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="stfl, hierarchical, centralized on a CUDA device: replay each training step as a"
                        " CUDA graph, one launch a step (default on a CUDA device; --no-cuda-graphs runs the"
                        " eager loop)")
    p.add_argument("--backend", choices=("inprocess", "torch"), default="inprocess",
                   help="transport: threads in this process, or one process per party (gloo)")
    p.add_argument("--json", type=Path, help="write the result object here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_arguments(p)
    run_tdcd.add_arguments(p)
    run_network.add_arguments(p)
    p.set_defaults(handler=run, option_default=p.get_default)  # for check_scope: was an option set?


def _check_args(args: argparse.Namespace) -> None:
    for name in ("epochs", "batch_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.vae_epochs is not None and args.vae_epochs < 1:
        raise InputError(f"--vae-epochs must be at least 1, got {args.vae_epochs}")
    if not args.lr > 0:
        raise InputError(f"--lr must be positive, got {args.lr}")
    if args.seed < 0:
        raise InputError(f"--seed must be non-negative, got {args.seed}")


def load_dataset(args: argparse.Namespace) -> Any:
    """The registered dataset, or the user's party CSVs (whose loader checks the IDs overlap)."""
    from securefl.data import load_party_csvs, load_vertical

    if args.party_csv:
        names = args.parties if args.parties != args.option_default("parties") else None
        return load_party_csvs(args.party_csv, id_column=args.id_column, label_column=args.label, names=names)
    return load_vertical(args.dataset or "breast_sklearn", data_dir=args.data_dir)


def _progress(args: argparse.Namespace, label: str) -> Callable[[int, int], None] | None:
    if args.no_progress:
        return None
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(done: int, total: int, phase: str = label) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = tqdm(total=total, desc=phase, unit="epoch", leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def run(args: argparse.Namespace) -> int:
    """``securefl run``: check every argument before any work, then dispatch on the dataset's kind and --role."""
    _check_args(args)
    check_args(args)
    run_network.check_args(args)
    inputs = [*(("--party-csv", f) for f in args.party_csv or ()), ("--csv", args.csv),
              ("--identity", args.identity), ("--trust", args.trust)]
    check_distinct_inputs(inputs)
    if args.json:
        check_output(args.json, "--json")
        check_apart([("--json", args.json)], inputs)
    from securefl.data.registry import get_dataset
    from securefl.runtime import resolve_device
    from securefl.runtime.preload import preload

    resolve_device(args.device)
    kind = family(args, lambda name: get_dataset(name).kind)
    check_scope(args, kind, args.option_default)
    if args.role is None:  # every party here: its time is compared with other methods'
        # torch's compiler stack and, for parties in this process, a CUDA context: not inside the run's clock
        preload(args.device if args.backend == "inprocess" else None)
    if kind == "tdcd":
        return run_tdcd.main(args, _progress)
    if kind != "vertical" and args.role is not None:
        from securefl.commands.run_network_horizontal import run_horizontal_party

        return run_horizontal_party(args, _progress(args, f"{args.role}: {args.method}"))
    if kind != "vertical":
        return _run_horizontal(args, kind)
    return _run_vertical(args)


def _run_horizontal(args: argparse.Namespace, kind: str) -> int:
    """Every party of a CHFL- or GL-family run in this process: train, print one line, write --json."""
    from securefl.runtime import GPUPeak

    runner = run_chfl_family if kind == "chfl" else run_gl_family
    with GPUPeak.of_run(args.device, args.backend) as peak:
        result = runner(args, _progress(args, f"{args.method} rounds"))
    peak.into(result)
    result.setdefault("settings", {}).update({"secure_agg": args.secure_agg, "backend": args.backend})
    print(summary_line(args, result))
    if args.json:
        write_json_atomically(args.json, result)
    return 0


def _run_vertical(args: argparse.Namespace) -> int:
    """STFL, HE-VFL, Hierarchical or Centralized: one party (--role) or every party here."""
    from securefl.runtime import GPUPeak

    args.epochs = args.epochs or 100
    args.batch_size = args.batch_size or 128
    if args.role is not None:
        passive = args.role != args.parties[0]
        label = "VAE" if passive and args.method == "stfl" else args.method
        progress = _progress(args, f"{args.role}: {label}")
        return run_network.run_party(args, method_config(args.method, args, progress=None), progress)
    dataset = load_dataset(args)
    split = stfl_split(dataset, seed=args.seed, all_data=args.all_data)
    with GPUPeak.of_run(args.device, args.backend) as peak:
        result = run_method(args.method, split, args)
    peak.into(result)
    result.setdefault("settings", {}).update({"all_data": args.all_data, "backend": args.backend})
    metrics = result["metrics"]
    print(f"{args.method} on {dataset.name} (seed {args.seed}): accuracy {metrics['accuracy']:.4f}"
          f" | AUROC {metrics.get('auroc', float('nan')):.4f} | {result['seconds']:.2f} s"
          f" | {result['bytes']:,} bytes")
    if args.json:
        write_json_atomically(args.json, result)
    return 0


def method_config(method: str, args: argparse.Namespace, *, progress: Callable[[int, int], None] | None) -> Any:
    """The settings the arguments give: an HEVFLConfig for he-vfl, else an STFLConfig (which
    Hierarchical and Centralized read too)."""
    common = {"epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
              "device": args.device, "progress": progress}
    if method == "he-vfl":
        from baselines.he_vfl import HEVFLConfig, activation_bound_for

        bound = activation_bound_for(args.dataset) if args.activation_bound is None else args.activation_bound
        return HEVFLConfig(he=args.he, passive_seed=args.passive_seed, share_seed=args.share_seed,
                           activation_bound=bound, **common)
    from securefl.algorithms.stfl import STFLConfig

    return STFLConfig(vae_epochs=args.vae_epochs or args.epochs, cuda_graphs=args.cuda_graphs is not False,
                      latent=args.latent, latent_seed=args.latent_seed, **common)


def run_method(method: str, split: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Build the method's config from the arguments and run it on ``split``."""
    config = method_config(method, args, progress=_progress(args, method))
    if method == "he-vfl":
        from baselines.he_vfl import run_he_vfl

        return run_he_vfl(split, config, backend=args.backend)
    if method == "stfl":
        from securefl.algorithms.stfl import run_stfl

        return run_stfl(split, config, backend=args.backend)
    if method == "hierarchical":
        from baselines.hierarchical import run_hierarchical

        return run_hierarchical(split, config)
    from baselines.centralized import run_centralized

    return run_centralized(split, config)
