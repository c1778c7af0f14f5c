"""``securefl demo``: the protocol layer end to end on bundled data, in seconds.

scikit-learn's breast-cancer data is given patient IDs and split between a
*hospital* (labels + 10 features) and a *lab* (20 features) whose patients only
partly overlap, each in its own shuffled order. The demo then runs

1. PSI, so both hold the common patients' rows in one agreed order;
2. one secure-aggregation round, where three clinics' feature sums reach a server
   that sees only masked vectors;
3. one encrypted matrix-product round trip: the lab encrypts its aligned features
   under its own key, the hospital multiplies them by its weights and masks the
   result, the lab decrypts the masked product, and the hospital unmasks it;

4. STFL against HE-VFL (CKKS) on the same split (bundled data, ``--epochs``
   epochs): the accuracy / time / bytes comparison of the STFL paper, and what the
   lab, the passive party, learns of the labels in each (a label-inference attack on
   the gradients HE-VFL lets it decrypt; STFL's messages to it, from its transport);

and prints what each party learned, the time and the bytes sent.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from protocols.channels import SecAggConfig, average_client, average_server
from protocols.errors import InputError
from protocols.he import BACKENDS as HE_BACKENDS
from protocols.psi import psi_two_party
from protocols.transport import run_parties
from securefl.commands import plain_text
from securefl.commands.demo_he import encrypted_matmul_round_trip
from securefl.results import check_output, write_json_atomically


@dataclass(frozen=True)
class DemoData:
    """The two parties' tables: IDs, features and (hospital only) labels."""

    hospital_ids: list[str]
    hospital_x: np.ndarray
    labels: np.ndarray
    lab_ids: list[str]
    lab_x: np.ndarray


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="PSI, secure aggregation and an encrypted matmul on bundled data",
                              description=plain_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--he", choices=sorted(HE_BACKENDS), default="ckks", help="encryption for the matmul round trip")
    p.add_argument("--epochs", type=int, default=10,
                   help="epochs for the STFL vs HE-VFL step (paper: 100; 0 skips the step)")
    p.add_argument("--json", type=Path, help="also write the numbers printed here to this JSON file")
    p.set_defaults(handler=run)


def make_parties() -> DemoData:
    """Split breast cancer into two overlapping, independently shuffled parties."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    ids = np.array([f"patient-{i:04d}" for i in range(len(x))])
    rng = np.random.default_rng()  # which rows each party holds: not secret, not crypto
    hosp = rng.permutation(np.arange(0, 400))
    lab = rng.permutation(np.arange(170, len(x)))
    return DemoData(hospital_ids=ids[hosp].tolist(), hospital_x=x[hosp, :10], labels=y[hosp],
                    lab_ids=ids[lab].tolist(), lab_x=x[lab, 10:])


def _psi(data: DemoData) -> dict[str, Any]:
    run = run_parties({"hospital": psi_two_party, "lab": psi_two_party},
                      kwargs={"hospital": {"peer": "lab", "ids": data.hospital_ids},
                              "lab": {"peer": "hospital", "ids": data.lab_ids}})
    hosp, lab = run.results["hospital"], run.results["lab"]
    if hosp.ids != lab.ids:
        raise AssertionError("PSI parties disagree on the aligned order")  # a bug, not bad input
    print(f"[1] PSI: hospital {len(data.hospital_ids)} patients, lab {len(data.lab_ids)};"
          f" both learned the same {hosp.size} common IDs in one order"
          f" | {run.seconds:.2f} s | {run.bytes:,} bytes")
    print("    each learned: the common IDs and the other's set size, nothing about the other's other IDs")
    return {"hospital_rows": hosp.indices, "lab_rows": lab.indices, "size": hosp.size,
            "seconds": run.seconds, "bytes": run.bytes}


def _secagg(data: DemoData) -> dict[str, Any]:
    clinics = np.array_split(np.arange(len(data.hospital_x)), 3)
    names = [f"clinic{i}" for i in range(3)]
    config = SecAggConfig(secure=True, threshold=2)
    kwargs: dict[str, dict[str, Any]] = {"server": {"clients": names, "config": config}}
    for name, rows in zip(names, clinics):
        kwargs[name] = {"server": "server", "vector": data.hospital_x[rows].mean(axis=0),
                        "weight": float(len(rows)), "config": config}
    roles = {"server": average_server, **{n: average_client for n in names}}
    run = run_parties(roles, kwargs=kwargs, record=True)
    mean = np.asarray(run.results["server"])
    err = float(np.abs(mean - data.hospital_x.mean(axis=0)).max())
    seen = [m for m in run.logs["server"] if m.src == names[0] and isinstance(m.fields.get("y"), np.ndarray)]
    print(f"[2] secure aggregation: 3 clinics' feature means averaged; server's mean is off the"
          f" plain mean by {err:.1e} | {run.seconds:.2f} s | {run.bytes:,} bytes")
    print(f"    server learned: only the weighted mean (it received {len(run.logs['server'])} messages,"
          f" inputs masked{'; e.g. clinic0 sent ' + _head(seen[0]['y']) if seen else ''})")
    return {"max_abs_error": err, "seconds": run.seconds, "bytes": run.bytes}


def _head(values: np.ndarray) -> str:
    return "[" + ", ".join(str(v) for v in values.ravel()[:3]) + ", ...]"


def _stfl_vs_he_vfl(epochs: int) -> dict[str, Any]:
    """STFL and HE-VFL (CKKS) on one split of the bundled data: accuracy, time, bytes, and what the
    passive party learns of the labels (attacked, and read from its transport)."""
    from baselines.he_vfl import HEVFLConfig, run_he_vfl
    from securefl.algorithms.stfl import STFLConfig, run_stfl
    from securefl.data import load_vertical, stfl_split
    from securefl.runtime.leakage import graded_view, leakage_over_steps, received
    from securefl.runtime.preload import preload

    preload()  # torch's first optimizer imports its compiler stack: not inside STFL's time
    split = stfl_split(load_vertical("breast_sklearn"), seed=0)
    active, passive = split.dataset.active, split.dataset.passive[0]
    steps, observe = graded_view(dict(zip(active.ids, active.labels)), passive.ids)

    # latent_seed, passive_seed, share_seed: the same latent draws and initial weights every time, so the
    # demo repeats
    out = {"stfl": run_stfl(split, STFLConfig(epochs=epochs, vae_epochs=epochs, latent_seed=0), record=True),
           "he-vfl (ckks)": run_he_vfl(split, HEVFLConfig(he="ckks", epochs=epochs, passive_seed=0, share_seed=0),
                                       observe=observe)}
    print(f"[4] STFL vs HE-VFL (CKKS), breast cancer, {epochs} epochs, same split:")
    for name, r in out.items():
        print(f"    {name:14s} accuracy {r['metrics']['accuracy']:.4f} | {r['seconds']:6.2f} s"
              f" | {r['bytes']:>12,} bytes")
    leak, seen = leakage_over_steps(steps), received(out["stfl"]["logs"][passive.name])
    print("    what the passive party learned of the labels:")
    print(f"      he-vfl: dL/da for each of its rows, which it decrypts; a cosine attack on them recovers the"
          f" labels with AUROC {leak['cosine_auroc']:.3f} (1 = every label)")
    print(f"      stfl:   {seen['messages']} messages ({', '.join(sorted(seen['kinds']))}) holding"
          f" {seen['float_values']} float values: nothing to attack")
    summary = {name: {"accuracy": r["metrics"]["accuracy"], "seconds": r["seconds"], "bytes": r["bytes"]}
               for name, r in out.items()}
    summary["he-vfl (ckks)"]["label_attack"] = {k: leak[k] for k in ("norm_auroc", "cosine_auroc", "graded_steps")}
    summary["stfl"]["passive_received"] = seen
    return summary


def run(args: argparse.Namespace) -> int:
    if args.epochs < 0:
        raise InputError(f"--epochs must be 0 (skip) or positive, got {args.epochs}")
    if args.json is not None:
        check_output(args.json, "--json")
    start = time.perf_counter()
    data = make_parties()
    psi = _psi(data)
    agg = _secagg(data)
    he = encrypted_matmul_round_trip(data.lab_x[psi["lab_rows"]][:64], backend=args.he)
    methods = _stfl_vs_he_vfl(args.epochs) if args.epochs else {}
    total = time.perf_counter() - start
    nbytes = psi["bytes"] + agg["bytes"] + he["bytes"] + sum(m["bytes"] for m in methods.values())
    print(f"total: {total:.2f} s | {nbytes:,} bytes sent by all parties")
    if args.json is not None:
        write_json_atomically(args.json, {
            "method": "demo", "dataset": "breast_cancer (scikit-learn)", "seconds": total, "bytes": nbytes,
            "device": "cpu", "seed": 0,  # STFL's and HE-VFL's split and weights; PSI's party rows are drawn afresh
            "settings": {"he": args.he, "epochs": args.epochs, "psi_party_rows": "drawn afresh each run"},
            "metrics": {"intersection_size": psi["size"], "secagg_max_abs_error": agg["max_abs_error"],
                        "matmul_max_abs_error": he["max_abs_error"]},
            "steps": {"psi": {k: psi[k] for k in ("size", "seconds", "bytes")},
                      "secagg": agg, "he_matmul": he, "methods": methods}})
    return 0


__all__ = ["DemoData", "add_parser", "make_parties", "run"]
