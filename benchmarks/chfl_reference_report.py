"""Summary and Markdown of benchmarks.chfl_reference: reference learners beside the MLP runs and the paper."""

from __future__ import annotations

import itertools
import statistics
from typing import Any, Sequence

from benchmarks.chfl import PAPER_TABLE2, PAPER_TABLE3, TOLERANCE
from benchmarks.chfl_reference import RATIO
from benchmarks.common import markdown_table
from benchmarks.stats import mean_std, sample_std

LEARNER_TITLES = {"pooled_common": "pooled common (GBM)", "local_gbm": "local GBM",
                  "local_trees": "local extra trees", "pooled_all": "pooled all (GBM)"}
MLP_TITLES = {"common": "MLP Common", "local": "MLP Local", "chfl_mu0": "MLP CHFL μ=0", "chfl": "MLP CHFL μ>0"}
PAPER_COLUMNS = ("common", "local", "chfl_mu0", "chfl")
"""The paper's Table II / III columns, in its order, as benchmarks.chfl names its methods."""
REFERENCE_FOR = {"pooled_common": "common", "local_trees": "local"}
"""The paper's column each reference learner's 3-split means are held against."""
KEY_FEATURE = {"covertype": "Elevation"}
"""A dataset's strongest single feature, whose place (common or one client's) the per-split table shows."""


def paper_row(dataset: str, n_clients: int) -> dict[str, float]:
    """The paper's accuracies for ``dataset`` at ``n_clients`` (Table II at 5, Table III for covertype)."""
    values = PAPER_TABLE3.get(n_clients) if dataset == "covertype" else None
    if values is None and n_clients == 5:
        values = PAPER_TABLE2.get(dataset)
    return dict(zip(PAPER_COLUMNS, values)) if values else {}


def best_of_three(values: Sequence[float], target: float) -> dict[str, Any] | None:
    """Means over every 3 of ``values`` (the paper averages 3 feature splits): the best, and the share
    of them within TOLERANCE of ``target`` or above it. None with fewer than 3 values."""
    if len(values) < 3:
        return None
    means = [statistics.fmean(c) for c in itertools.combinations(values, 3)]
    return {"best": max(means), "share_near_or_above": sum(m >= target - TOLERANCE for m in means) / len(means),
            "combinations": len(means)}


def summarize(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per (dataset, clients): each learner's and MLP method's mean ± sample std over the same splits."""
    groups: dict[tuple[str, int], dict[int, dict[str, float]]] = {}
    key_common: dict[tuple[str, int], int] = {}
    for run in report["runs"]:
        job = run["job"]
        group = (job["dataset"], job["n_clients"])
        groups.setdefault(group, {})[job["feature_seed"]] = dict(run["accuracy"])
        key_common[group] = key_common.get(group, 0) + (KEY_FEATURE.get(job["dataset"]) in run["common_features"])
    mlp: dict[tuple[str, int, int], dict[str, float]] = {
        (r["job"]["dataset"], r["job"]["n_clients"], r["job"]["feature_seed"]): r["accuracy"]
        for r in report.get("mlp", {}).get("runs", [])}
    out = []
    for (dataset, k), splits in groups.items():
        for split, acc in splits.items():
            acc.update({f"mlp_{m}": v for m, v in mlp.get((dataset, k, split), {}).items()})
        methods = sorted({m for acc in splits.values() for m in acc})
        cells = {}
        for m in methods:
            values = [splits[s][m] for s in sorted(splits) if m in splits[s]]
            cells[m] = {"mean": statistics.fmean(values), "std": sample_std(values),
                        "n": len(values), "values": values}
        paper = paper_row(dataset, k)
        three = {m: best_of_three(cells[f"mlp_{m}"]["values"], paper[m]) for m in paper if f"mlp_{m}" in cells}
        if paper:
            three["pooled_common"] = best_of_three(cells["pooled_common"]["values"], paper["common"])
            three["local_trees"] = best_of_three(cells["local_trees"]["values"], paper["local"])
        out.append({"dataset": dataset, "n_clients": k, "splits": sorted(splits), "cells": cells, "paper": paper,
                    "per_split": [splits[s] for s in sorted(splits)], "key_common": key_common[(dataset, k)],
                    "best_of_three": {m: v for m, v in three.items() if v}})
    return out


def _cell(cells: dict[str, Any], name: str) -> str:
    c = cells.get(name)
    return mean_std(c["mean"], c["std"], c["n"], digits=4) if c else "—"


def _verdicts(entry: dict[str, Any]) -> list[str]:
    """Plain sentences comparing the paper with the references on the same features."""
    cells, paper, name = entry["cells"], entry["paper"], f"{entry['dataset']}, {entry['n_clients']} clients"
    if not paper:
        return []
    local_best = max(("local_gbm", "local_trees"), key=lambda m: cells[m]["mean"])

    def gap(paper_value: float, ours: float) -> str:
        return f"{abs(100 * (paper_value - ours)):.2f} points {'above' if paper_value >= ours else 'below'}"

    common, local = cells["pooled_common"]["mean"], cells[local_best]["mean"]
    key, n = KEY_FEATURE.get(entry["dataset"]), len(entry["splits"])
    lines = [f"- {name}: {key} is a common feature in {entry['key_common']} of the {n} feature splits here"
             f" ({100 * entry['key_common'] / n:.0f}%; a random split makes any one feature common"
             f" {100 * RATIO:.0f}% of the time)."] if key else []
    lines += [
        f"- {name}: the paper's Common ({paper['common']:.4f}) is {gap(paper['common'], common)} gradient-boosted"
        f" trees trained centrally on every client's rows of the same common features ({common:.4f}),"
        " which see everything FedAvg over those features can use.",
        f"- {name}: the paper's Local ({paper['local']:.4f}) is {gap(paper['local'], local)} the better reference"
        f" learner on each client's own features ({LEARNER_TITLES[local_best]}, {local:.4f}).",
        f"- {name}: the paper's CHFL μ>0 ({paper['chfl']:.4f}) is {gap(paper['chfl'], cells['pooled_all']['mean'])}"
        f" one model trained on every feature and every client's rows (pooled all,"
        f" {cells['pooled_all']['mean']:.4f}), what one party holding all of the data reaches.",
    ]
    return lines


def _three_table(entry: dict[str, Any]) -> str:
    rows = []
    for m, v in entry["best_of_three"].items():
        title = MLP_TITLES.get(m) or f"{LEARNER_TITLES[m]} (against the paper's {REFERENCE_FOR[m].title()})"
        target = entry["paper"][REFERENCE_FOR.get(m, m)]
        rows.append([title, f"{target:.4f}", f"{v['best']:.4f}",
                     f"{100 * v['share_near_or_above']:.1f}% of {v['combinations']}"])
    return markdown_table(["method", "paper", "best mean of 3 splits here",
                           f"3-split means within {100 * TOLERANCE:.0f} points of the paper or above"], rows)


def _per_split(report: dict[str, Any], dataset: str, n_clients: int, entry: dict[str, Any]) -> str:
    key = KEY_FEATURE.get(dataset)
    methods = [*LEARNER_TITLES, *(f"mlp_{m}" for m in MLP_TITLES if f"mlp_{m}" in entry["cells"])]
    rows = []
    for run in report["runs"]:
        job = run["job"]
        if (job["dataset"], job["n_clients"]) != (dataset, n_clients):
            continue
        place = "—"
        if key:
            owners = [f"c{i}" for i, u in enumerate(run["unique_features"]) if key in u]
            place = "common" if key in run["common_features"] else ", ".join(owners) or "nobody"
        acc = entry["per_split"][entry["splits"].index(job["feature_seed"])]
        rows.append([job["feature_seed"], place, *(f"{acc[m]:.4f}" if m in acc else "—" for m in methods)])
    titles = [*LEARNER_TITLES.values(), *(MLP_TITLES[m[4:]] for m in methods if m.startswith("mlp_"))]
    return markdown_table(["split", f"{key or 'key feature'} held by", *titles], rows)


def _run_kind(source: dict[str, Any]) -> str:
    """The compared benchmarks.chfl file's rounds and whether it was a ``--quick`` run, as recorded."""
    if "quick" not in source:  # compared before these were recorded
        return "rounds and --quick not recorded"
    return f"{source.get('rounds')} rounds, " + ("**--quick run**" if source["quick"] else "full run")


def to_markdown(report: dict[str, Any], header: str) -> str:
    """The report: summary table, what it says about the paper's numbers, 3-split means, per-split values."""
    mlp = report.get("mlp", {}).get("source") or {}
    lines = [header, "", (f"MLP columns: `{report['settings']['compare']}` (benchmarks.chfl, {mlp.get('date')},"
                          f" commit `{mlp.get('commit')}`, {_run_kind(mlp)}), the same feature splits and"
                          " sample seed." if mlp else "MLP columns: none (no `--compare` file)."),
             f"Total time {report['seconds']:.0f} s.", "", "## Mean client test accuracy over feature splits", ""]
    rows = []
    for e in report["summary"]:
        mlp_cells = [_cell(e["cells"], f"mlp_{m}") for m in MLP_TITLES]
        paper = [f"{e['paper'][m]:.4f}" if m in e["paper"] else "—" for m in PAPER_COLUMNS]
        rows.append([e["dataset"], e["n_clients"], *(_cell(e["cells"], m) for m in LEARNER_TITLES), *mlp_cells,
                     " / ".join(paper)])
    lines.append(markdown_table(["dataset", "clients", *LEARNER_TITLES.values(), *MLP_TITLES.values(),
                                 "paper Common / Local / μ=0 / μ>0"], rows))
    verdicts = [v for e in report["summary"] for v in _verdicts(e)]
    if verdicts:
        lines += ["## What the references say about the paper's numbers", "", *verdicts, ""]
    threes = [e for e in report["summary"] if e["best_of_three"]]
    if threes:
        lines += ["## Three feature splits", "",
                  "The paper averages three random feature splits (five runs each). Below, every choice of three"
                  " of the splits run here: the best such mean, and how many come within"
                  f" {100 * TOLERANCE:.0f} points of the paper's number or above it.", ""]
        for e in threes:
            lines += [f"### {e['dataset']}, {e['n_clients']} clients", "", _three_table(e)]
    lines += ["## Per feature split", ""]
    for e in report["summary"]:
        lines += [f"### {e['dataset']}, {e['n_clients']} clients", "",
                  _per_split(report, e["dataset"], e["n_clients"], e)]
    return "\n".join(lines)
