"""Two GL result files on the same seeds: how far apart are their per-client metrics?

    python -m benchmarks.gl_compare A.json B.json --markdown FILE

Pairs the runs of A and B that share dataset, method and seed (a GPU run and the CPU
run it repeats, say) and, for each dataset, method and metric, reports the mean of
A − B over (seed, client) pairs, its standard error over seeds (each seed's clients
averaged first: a seed's clients share one training run) and the largest |A − B|.
Settings that differ other than the device are listed above each dataset's table,
so that a comparison of two devices is not read as one of two settings, and each
file's ``--quick`` flag and the commits its runs came from are listed, with a warning
when the two files ran different code.
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from benchmarks.common import git_commit, markdown_table, run_main, short_commit, writable, write_text
from benchmarks.gl_merge import load_result, upgrade
from benchmarks.stats import sample_std

METRICS = ("auroc", "accuracy", "balanced_accuracy", "auprc")


def _by_key(runs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], Mapping[str, Any]]:
    return {(r["method"], r["seed"]): r for r in runs}


def paired_differences(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]],
                       metric: str) -> dict[str, dict[int, list[float]]]:
    """Per method, per seed both files ran: the clients' ``metric`` differences a − b, in points.

    A client or metric missing from either run (or a null, a one-class score) is left out.
    """
    out: dict[str, dict[int, list[float]]] = {}
    theirs = _by_key(b)
    for key, run in sorted(_by_key(a).items()):
        other = theirs.get(key)
        if other is None:
            continue
        mine, yours = run["metrics"]["clients"], other["metrics"]["clients"]
        diffs = [100 * (mine[c][metric] - yours[c][metric]) for c in sorted(mine.keys() & yours.keys())
                 if mine[c].get(metric) is not None and yours[c].get(metric) is not None]
        if diffs:
            out.setdefault(key[0], {})[key[1]] = diffs
    return out


def summarise(per_seed: Mapping[int, Sequence[float]]) -> dict[str, float]:
    """Mean difference over every (seed, client) pair, its standard error over seeds, max |difference|."""
    flat = [d for diffs in per_seed.values() for d in diffs]
    seed_means = [statistics.fmean(d) for d in per_seed.values()]
    se = sample_std(seed_means) / math.sqrt(len(seed_means))  # nan for one seed
    return {"seeds": len(per_seed), "pairs": len(flat), "mean": statistics.fmean(flat), "se": se,
            "max_abs": max(abs(d) for d in flat)}


def differing_settings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Setting names whose values differ between two stored experiments, the device aside."""
    return sorted(k for k in a.keys() | b.keys() if k != "device" and a.get(k) != b.get(k))


def upgraded(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``result``'s datasets as ``--merge`` reads them (a copy): :func:`benchmarks.gl_merge.upgrade`'s
    setting defaults (a file without ``select`` ran "last") and each one's ``runs_from``."""
    result = copy.deepcopy(dict(result))
    for res in result["datasets"].values():  # upgrade() takes a file's seeds from its header otherwise
        res.setdefault("seeds", sorted({r["seed"] for r in res["runs"]}))
    return upgrade(result)


def commits(datasets: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """The short commits the runs of ``names`` came from, in the order the file records them."""
    found = (short_commit(p.get("commit")) for name in names for p in datasets[name]["runs_from"])
    return list(dict.fromkeys(found))


def _listed(commits_: Sequence[str]) -> str:
    return ", ".join(f"`{c}`" for c in commits_)


def _source(name: str, path: Path, result: Mapping[str, Any], runs_from: Sequence[str]) -> str:
    dev = result.get("device", {})
    where = dev.get("gpu") or dev.get("cpu", "?")
    quick = {True: "--quick run", False: "full run"}.get(result.get("quick"), "--quick not recorded")
    return (f"- {name}: `{path}` ({dev.get('device', '?')}, {where}; {quick}; written {result.get('date', '?')};"
            f" runs from commit{'s' if len(runs_from) > 1 else ''} {_listed(runs_from)})")


def _code_warning(ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """A line saying that the two files' runs came from different commits (none when they did not)."""
    only = [f"{_listed(mine)} only in {side}" for side, mine in
            (("A", [c for c in ours if c not in theirs]), ("B", [c for c in theirs if c not in ours])) if mine]
    if not only:
        return []
    return [f"- **Warning: the two files ran different code**: {'; '.join(only)}. A Δ may come from the code,"
            " not only from the device."]


def render(paths: tuple[Path, Path], a: Mapping[str, Any], b: Mapping[str, Any], made: str = "") -> str:
    """The Markdown report: one table per dataset both files hold; ``made`` says when and from which commit."""
    ua, ub = upgraded(a), upgraded(b)
    shared = sorted(ua.keys() & ub.keys())
    ca, cb = commits(ua, shared), commits(ub, shared)
    lines = ["# GL: the same seeds in two result files", "", *([made] if made else []),
             _source("A", paths[0], a, ca), _source("B", paths[1], b, cb), *_code_warning(ca, cb),
             "", "Δ = A − B in points, over every (seed, client) pair both ran; SE over seeds (a seed's "
             "clients averaged first); max abs Δ = the largest |Δ| of one client in one seed.", ""]
    for name in shared:
        da, db = ua[name], ub[name]
        lines.append(f"## {name}")
        lines.append("")
        other = differing_settings(da["settings"], db["settings"])
        lines.append(f"Settings that differ besides the device: {', '.join(other) if other else 'none'}.")
        lines.append("")
        rows = []
        for metric in METRICS:
            for method, per_seed in paired_differences(da["runs"], db["runs"], metric).items():
                s = summarise(per_seed)
                rows.append([method, metric, s["seeds"], s["pairs"], f"{s['mean']:+.2f}",
                             "—" if math.isnan(s["se"]) else f"{s['se']:.2f}", f"{s['max_abs']:.2f}"])
        lines.append(markdown_table(["method", "metric", "seeds", "pairs", "mean Δ", "SE", "max abs Δ"], rows)
                     if rows else "No runs share a method and seed.\n")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gl_compare", description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a benchmarks.gl result file (e.g. a GPU run)")
    parser.add_argument("b", type=Path, help="another one, with runs of the same seeds (e.g. the CPU run)")
    parser.add_argument("--markdown", type=Path, required=True)
    args = parser.parse_args(argv)
    writable(parser, inputs={"a": args.a, "b": args.b}, markdown=args.markdown)
    a, b = load_result(args.a, "A"), load_result(args.b, "B")
    made = (f"- written {datetime.now(timezone.utc).isoformat(timespec='seconds')} at commit `{git_commit()}` "
            f"by `python -m benchmarks.gl_compare {args.a} {args.b}`")
    text = render((args.a, args.b), a, b, made)
    write_text(args.markdown, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.gl_compare"))
