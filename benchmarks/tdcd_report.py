"""Markdown tables and the PNG of ``benchmarks.tdcd`` (curves averaged over seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks.common import markdown_table

SYMBOL = {"local_steps": "Q", "silos": "N", "clients": "K"}


def grouped(panel: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """The panel's curves by the varied value (one entry per seed)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for curve in panel["curves"]:
        out.setdefault(curve["value"], []).append(curve)
    return out


def mean_curve(runs: Sequence[dict[str, Any]]) -> tuple[list[int], np.ndarray]:
    """Rounds and the mean objective over seeds at each evaluated round."""
    rounds = [h["round"] for h in runs[0]["history"]]
    return rounds, np.mean([[h["objective"] for h in r["history"]] for r in runs], axis=0)


def _at(rounds: list[int], values: np.ndarray, fraction: float) -> str:
    target = fraction * rounds[-1]
    i = min(range(len(rounds)), key=lambda k: abs(rounds[k] - target))
    return f"{values[i]:.4g} (r{rounds[i]})"


def gap_left(values: np.ndarray, optimum: float) -> float:
    """(final - optimum) / (start - optimum): the share of the way to the ridge optimum still to go."""
    return float((values[-1] - optimum) / max(values[0] - optimum, 1e-300))


def bytes_per_round(by_purpose: dict[str, int], rounds: int) -> float:
    """One round's training and averaging bytes: R rounds train R times but average R + 1 times
    (round 0's average starts every client from the same weights, as in the paper)."""
    return by_purpose["training"] / max(rounds, 1) + by_purpose["averaging"] / (rounds + 1)


def panel_rows(panel: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for value, runs in grouped(panel).items():
        rounds, values = mean_curve(runs)
        s = runs[0]["setting"]
        row = [panel["dataset"], f"{SYMBOL[panel['vary']]}={value}", f"N={s['silos']} K={s['clients']}"
               f" Q={s['local_steps']} B={s['batch_size']}", f"{values[0]:.4g}", _at(rounds, values, 0.25),
               _at(rounds, values, 0.5), f"{values[-1]:.4g}"]
        if "optimum" in runs[0]:
            optimum = float(np.mean([r["optimum"] for r in runs]))
            row += [f"{optimum:.4g}", f"{gap_left(values, optimum):.3f}",
                    f"{np.mean([r['metrics']['rmse'] for r in runs]):.4g}"]
        else:
            row += [f"{np.mean([r['metrics']['accuracy'] for r in runs]):.4f}"]
        per_round = np.mean([bytes_per_round(r["bytes_by_purpose"], rounds[-1]) for r in runs])
        row += [f"{np.mean([r['seconds'] for r in runs]):.1f}", f"{per_round / 2**20:.2f}", len(runs)]
        rows.append(row)
    return rows


PAPER = {
    "local_steps": "larger Q converges faster per communication round (Fig. 2a; 'radically' for the CNN, Fig. 3a)",
    "silos": "the effect of N is observable but not very strong; fewer silos converge a little faster (Fig. 2b)",
    "clients": "K plays a much smaller role than Q; its effect is mild (Fig. 2c, Fig. 3b)",
}


def observation(panel: dict[str, Any]) -> str:
    """The paper's observation for the varied setting, and what these curves show.

    Where the curves carry their ridge optimum, they are compared by the gap left, (final -
    optimum) / (r0 - optimum): each client standardises its own rows, so the optimum moves
    with N and K and raw final objectives would rank the optima, not the convergence.
    """
    groups = grouped(panel)
    values = sorted(groups)
    curves = {v: mean_curve(groups[v])[1] for v in values}
    if all("optimum" in r for runs in groups.values() for r in runs):
        score = {v: gap_left(curves[v], float(np.mean([r["optimum"] for r in groups[v]]))) for v in values}
        spread = max(score.values()) - min(score.values())
        what, spread_text = "gap left", f"spread of the gaps left {spread:.3g}"
    else:
        score = {v: float(curves[v][-1]) for v in values}
        start = float(np.mean([curves[v][0] for v in values]))
        spread = (max(score.values()) - min(score.values())) / max(start - min(score.values()), 1e-300)
        what, spread_text = "final objective", f"spread of the final objectives {spread:.3g} of the distance travelled"
    last = [score[v] for v in values]
    order = " < ".join(f"{SYMBOL[panel['vary']]}={v} ({score[v]:.3g})" for v in sorted(values, key=lambda v: score[v]))
    if panel["vary"] == "local_steps":
        verdict = "holds" if all(a > b for a, b in zip(last, last[1:])) else "does not hold"
    elif panel["vary"] == "silos":
        verdict = "ordering holds" if all(a <= b for a, b in zip(last, last[1:])) else "ordering does not hold"
    else:
        verdict = "mild" if spread < 0.1 else "not mild"
    return f"Paper: {PAPER[panel['vary']]}. Here, {what} {order}; {spread_text}: **{verdict}**."


def markdown(header: str, panels: Sequence[dict[str, Any]], settings: dict[str, Any], *,
             png: Path | None) -> str:
    parts = [header, _intro(settings), ""]
    if png is not None:
        parts += [f"![TDCD curves]({png.name})", ""]
    for panel in panels:
        regression = "optimum" in panel["curves"][0]
        headers = ["dataset", "curve", "setting", "objective r0", "at 25%", "at 50%", "final"]
        headers += ["ridge optimum", "gap left (final/r0)", "test RMSE"] if regression else ["test accuracy"]
        headers += ["seconds", "MiB per round (training + averaging)", "seeds"]
        parts += [f"## Fig. {panel['figure']}: {panel['caption']} — {panel['dataset']}", "",
                  markdown_table(headers, panel_rows(panel)), observation(panel), ""]
    return "\n".join(parts)


def _intro(settings: dict[str, Any]) -> str:
    scale = settings.get("mnist_scale", 1)
    return (
        "The training objective (mean loss over all training rows plus the L2 term, ridge: half the squared"
        f" error with l2 = {settings.get('l2', 0.01):g}, where the paper's example objective has lambda = 1 and"
        " its experiments state none; CNN: cross-entropy) computed by the federation with the hubs' averaged model"
        " after each evaluated round; a round is Q local iterations (the paper's x-axis). Every run goes"
        " through the real protocol: secure aggregation at each hub (plain where a silo has one client),"
        " intermediate information swapped between hubs. Fig. 2 runs on UCI regression sets that stand in for"
        " Superconductivity, which is not stored here (registered as `superconductivity`, it runs with"
        " `--datasets superconductivity` wherever its file exists); features standardised by each client on its own"
        " rows,"
        " the target as the file gives it (so objectives differ in scale between datasets). 'gap left' is"
        " (final - optimum) / (start - optimum) against the ridge optimum on the same rows: smaller is"
        " further converged. Fig. 3: MNIST's 10,000 stored test images split 80/20 per seed (the training"
        " images are not stored here)" + (f", with the paper's batch sizes divided by {scale} so that a CPU run"
                                          " takes minutes" if scale != 1 else "") + ".")


def plot_curves(panels: Sequence[dict[str, Any]], path: Path, *, quick: bool) -> Path | None:
    """One subplot per panel and dataset: objective against communication round, one line per value."""
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        for value, runs in grouped(panel).items():
            rounds, values = mean_curve(runs)
            ax.plot(rounds, values, marker=".", label=f"{SYMBOL[panel['vary']]}={value}")
        ax.set_title(f"Fig. {panel['figure']} {panel['dataset']}" + (" (quick)" if quick else ""), fontsize=9)
        ax.set_xlabel("communication round")
        ax.set_ylabel("training objective")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["PAPER", "bytes_per_round", "grouped", "markdown", "mean_curve", "observation", "panel_rows", "plot_curves"]
