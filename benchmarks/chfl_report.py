"""Markdown and the Fig. 4 plot for the CHFL benchmark: paper figures beside ours, honest verdicts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmarks.chfl import DATASETS, PAPER_TABLE2, PAPER_TABLE3, TOLERANCE
from benchmarks.chfl_summary import METHODS, tune_lr
from benchmarks.common import markdown_table
from benchmarks.stats import error_bar, mean_std
from protocols.errors import InputError
from securefl.data.chfl_partition import random_feature_split
from securefl.data.chfl_sets import load_chfl_dataset

LABELS = {"common": "Common", "local": "Local", "chfl_mu0": "CHFL μ=0", "chfl": "CHFL μ>0",
          "simple": "simple method (V-B5)"}


def _fmt(c: dict[str, Any] | None) -> str:
    return mean_std(c["mean"], c["std"], c["n"], digits=4) if c else "—"


def ordering(summary: dict[str, dict[str, Any]]) -> str:
    """The paper's claim CHFL μ>0 >= CHFL μ=0 > max(Common, Local), checked on the means."""
    if not all(m in summary for m in ("common", "local", "chfl_mu0", "chfl")):
        return "—"
    mean = {m: summary[m]["mean"] for m in summary}
    first = mean["chfl"] >= mean["chfl_mu0"] - 1e-9  # equal selections may differ in the last bit
    second = mean["chfl_mu0"] > max(mean["common"], mean["local"])
    if first and second:
        return "holds"
    failed = [t for t, ok in (("μ>0 ≥ μ=0", first), ("μ=0 > max(Common, Local)", second)) if not ok]
    return "**does not hold**: " + ", ".join(failed)


def table_two(report: dict[str, Any]) -> str:
    table2 = report["summary"]["table2"]
    rows = []
    for name in DATASETS:
        paper = PAPER_TABLE2.get(name)
        if name in table2:
            s = table2[name]
            rows.append([name, "ours", *(_fmt(s.get(m)) for m in METHODS), ordering(s)])
        elif name in report.get("not_run", {}):
            rows.append([name, "ours", "not run here (files not available)", "", "", "", "", "—"])
        else:
            continue
        if paper:
            rows.append([name, "paper", *(f"{v:.4f}" if v is not None else "—" for v in paper), "holds"])
    return markdown_table(["dataset", "source", *(LABELS[m] for m in METHODS), "paper's ordering"], rows)


def covertype_verdicts(report: dict[str, Any]) -> str:
    s = report["summary"]["table2"].get("covertype")
    if not s:
        return "- covertype was not run, so its 2-point target cannot be checked.\n"
    lines = []
    for m, paper in zip(("common", "local", "chfl_mu0", "chfl"), PAPER_TABLE2["covertype"]):
        gap = s[m]["mean"] - paper
        verdict = "met" if abs(gap) <= TOLERANCE else ("above the band" if gap > 0 else "**not met**")
        lines.append(f"- covertype {LABELS[m]}: {s[m]['mean']:.4f} vs paper {paper:.4f} ({100 * gap:+.2f} points;"
                     f" within {100 * TOLERANCE:.0f} points: {verdict})")
    return "\n".join(lines) + "\n"


def _feature_names(dataset: str, data_dir: str | None) -> tuple[str, ...] | None:
    """A dataset's feature names, or None where its files cannot be loaded here."""
    try:
        return tuple(load_chfl_dataset(dataset, data_dir=data_dir or os.environ.get("SECUREFL_DATA")).feature_names)
    except (OSError, ValueError, InputError):
        return None


def common_features(run: dict[str, Any], names: tuple[str, ...] | None) -> list[str] | None:
    """The run's common feature names: recorded, or recomputed from its feature seed (None if unknown)."""
    if run.get("common_features") is not None:
        return list(run["common_features"])
    if names is None:
        return None
    job = run["job"]
    common, _ = random_feature_split(len(names), job["n_clients"], job["ratio"], job["feature_seed"])
    return [names[i] for i in common]


def split_table(report: dict[str, Any], data_dir: str | None = None) -> str:
    """Table II per random feature split: the common features drawn and each method's mean over the runs."""
    runs = [r for r in tune_lr(report["runs"]) if r["job"]["experiment"] == "table2"]
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["job"]["dataset"], r["job"]["feature_seed"]), []).append(r)
    names: dict[str, tuple[str, ...] | None] = {}
    rows = []
    for (name, seed), chosen in sorted(groups.items()):
        if name not in names and chosen[0].get("common_features") is None:
            names[name] = _feature_names(name, data_dir)
        features = common_features(chosen[0], names.get(name))
        shown = "—" if features is None else ", ".join(_short_feature(n) for n in features)
        means = [sum(r["accuracy"][m] for r in chosen) / len(chosen) if all(m in r["accuracy"] for r in chosen)
                 else None for m in METHODS]
        rows.append([name, seed, len(chosen), *(f"{v:.4f}" if v is not None else "—" for v in means), shown])
    return markdown_table(["dataset", "feature split", "runs", *(LABELS[m] for m in METHODS), "common features"],
                          rows)


def lr_table(report: dict[str, Any]) -> str | None:
    """How often each learning rate was the clients' choice in Table II, per dataset and method."""
    runs = [r for r in tune_lr(report["runs"]) if r["job"]["experiment"] == "table2"
            and isinstance(r["job"].get("lr"), list)]
    if not runs:
        return None
    lrs = sorted({lr for r in runs for lr in r["job"]["lr"]})
    rows = []
    for name in dict.fromkeys(r["job"]["dataset"] for r in runs):
        for m in METHODS:
            picks = [s["lr"] for r in runs if r["job"]["dataset"] == name and m in r["selected"]
                     for s in r["selected"][m].values()]
            if picks:
                rows.append([name, LABELS[m], *(picks.count(lr) for lr in lrs)])
    return markdown_table(["dataset", "method", *(f"lr {lr:g}" for lr in lrs)], rows)


def _settings_line(s: dict[str, Any]) -> str:
    """How the learning rate was set: tuned per client from a grid, or one fixed value (older files)."""
    if len(s.get("lrs", ())) > 1:
        grid = ", ".join(f"{lr:g}" for lr in s["lrs"])
        return f"Adam, each client choosing its lr from ({grid}) on its own validation rows"
    return f"Adam lr {(s.get('lrs') or [s.get('lr', 1e-3)])[0]:g} (fixed, not tuned)"


def _short_feature(name: str) -> str:
    """Covertype's long column names, shortened for the table (Soil_Type12 -> Soil12)."""
    for long, short in (("Soil_Type", "Soil"), ("Wilderness_Area", "Wild"), ("Horizontal_Distance_To_", "HD_"),
                        ("Vertical_Distance_To_", "VD_")):
        name = name.replace(long, short)
    return name


def table_three(report: dict[str, Any]) -> str:
    summary = report["summary"]
    rows = []
    for n, s in summary["table3"].items():
        rows.append([n, "ours", *(_fmt(s.get(m)) for m in METHODS[:4]), ordering(s)])
        if summary["sweep_dataset"] == "covertype" and int(n) in PAPER_TABLE3:
            rows.append([n, "paper", *(f"{v:.4f}" for v in PAPER_TABLE3[int(n)]), ""])
    return markdown_table(["clients", "source", *(LABELS[m] for m in METHODS[:4]), "ordering"], rows)


def fig_four_table(report: dict[str, Any]) -> str:
    rows = [[ratio, *(_fmt(s.get(m)) for m in METHODS[:4]), ordering(s)]
            for ratio, s in report["summary"]["fig4"].items()]
    return markdown_table(["common ratio", *(LABELS[m] for m in METHODS[:4]), "ordering"], rows)


def timing_table(report: dict[str, Any]) -> str:
    timing = report["summary"]["timing"]
    rows = [[mode, t["rounds"], f"{t['round_seconds']:.2f}", f"{t['aggregation_seconds']:.3f}", t["bytes"]]
            for mode, t in timing.items()]
    return markdown_table(["aggregation", "rounds", "seconds per round (training + averaging)",
                           "seconds per round in the averaging protocol", "bytes (all parties)"], rows)


def plot_fig4(report: dict[str, Any], path: Path) -> Path | None:
    """Fig. 4: mean client test accuracy against the common-feature ratio; None when fewer than two ratios."""
    fig4 = report["summary"]["fig4"]
    if len(fig4) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = [float(r) for r in fig4]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m in METHODS[:4]:
        means = [fig4[r][m]["mean"] for r in fig4]
        stds = [error_bar(fig4[r][m]["std"]) for r in fig4]
        ax.errorbar(ratios, means, yerr=stds, marker="o", capsize=3, label=LABELS[m])
    ax.set_xlabel("ratio of common features")
    ax.set_ylabel("mean client test accuracy")
    ax.set_title(f"{report['summary']['sweep_dataset']}" + (" (quick run)" if report.get("quick") else ""))
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _lr_part(report: dict[str, Any]) -> list[str]:
    table = lr_table(report)
    return [] if table is None else ["Learning rate each client chose (clients x runs, Table II):", "", table]


def chunks_part(report: dict[str, Any]) -> list[str]:
    """Lines naming each chunk of a merged run and, if the plan is not complete, how much is missing."""
    chunks, missing = report.get("chunks", []), report.get("missing_jobs", 0)
    lines = []
    if missing:
        lines += [f"**Incomplete: {missing} planned jobs have not run yet** (continue with `--merge`).", ""]
    if len(chunks) > 1:
        lines += ["Chunks (each run of the command that added jobs to this file):", ""]
        lines += [f"- {c['date']}, commit `{c['commit']}`, load {c['load_average_1m']} at the start:"
                  f" {c['jobs']} jobs in {c['seconds']:.0f} s (`{c['command']}`)" for c in chunks]
        lines.append("")
    return lines


def to_markdown(report: dict[str, Any], header: str, *, png: Path | None = None,
                data_dir: str | None = None) -> str:
    s = report["settings"]
    parts = [header, "", *chunks_part(report),
             f"Runs: Table II {s['splits']} feature splits x {s['runs']} sample seeds per dataset; Table III and"
             f" Fig. 4 {s['sweep_splits']} feature split(s) x 1 run per point (the 5-client / 30% point reuses"
             " Table II's first run of each of those splits, so every point has the same splits and their"
             f" common features nested). T = {s['rounds']} rounds x 5 local epochs, batch 64,"
             f" {_settings_line(s)}, μ > 0 grid ({', '.join(f'{m:g}' for m in s['mus'])})."
             " Each client picks its round (and μ) on its own validation rows; a run's number is the mean"
             " over clients of their test accuracy, a cell the mean ± sample std (n − 1) over runs."
             f" Total time {report['seconds']:.0f} s.", "",
             "## Table II: mean client test accuracy (5 clients, 30% common features)", "", table_two(report),
             covertype_verdicts(report), *_lr_part(report),
             "Per random feature split (mean over its runs). The paper's covertype Common std (0.1086) shows how"
             " much a split matters: Elevation, covertype's strongest feature, is common in about 30% of"
             " random splits.", "", split_table(report, data_dir), "",
             f"## Table III: number of clients ({report['summary']['sweep_dataset']}, 30% common)", "",
             table_three(report), f"## Fig. 4: ratio of common features ({report['summary']['sweep_dataset']})",
             "", fig_four_table(report)]
    if png is not None:
        parts += [f"![Fig. 4]({png.name})", ""]
    parts += ["## Time per round: secure vs plain aggregation", "", timing_table(report)]
    return "\n".join(parts)
