"""Where the STFL benchmark's numbers came from: the runs behind a merged file, their hosts,
the cells a stopped run kept, the machine-speed probes.

Kept apart from :mod:`benchmarks.stfl_report`'s tables: time depends on the host, so
every line here names the run, host and load behind a table's seconds.
"""

from __future__ import annotations

from typing import Any

from benchmarks.stfl import PAPER_NAMES


def runs_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run behind a merged report: each dataset's, and those of rows rerun later."""
    sets = [d for d in report["datasets"] if "run" in d]
    return [d["run"] for d in sets] + [r for d in sets for r in d.get("row_runs", {}).values()]


def gpu_text(run: dict[str, Any]) -> str:
    """``<GPU> (host CPU: <cpu>, N cores)`` of a run's device record."""
    device = run.get("device") or {}
    return (f"an {device.get('gpu', 'unnamed GPU')} (host CPU: {device.get('cpu', '?')},"
            f" {device.get('cores', '?')} cores)")


def graphs_text(run: dict[str, Any]) -> str:
    """``, CUDA graphs`` for a run that trained with them (the CUDA default since they were measured)."""
    return ", CUDA graphs" if (run.get("settings") or {}).get("cuda_graphs") else ""


def workers_text(run: dict[str, Any]) -> str:
    """``, N cells at once`` for a run whose cells shared the machine (``--workers`` above 1)."""
    workers = (run.get("settings") or {}).get("workers", 1)
    return f", {workers} cells at once, so its seconds are upper bounds" if workers > 1 else ""


def probe_lines(report: dict[str, Any]) -> str:
    """The machine-speed probe of each run behind the tables (what one SEAL rotation took)."""
    probes = []
    for d in report["datasets"]:
        name, later = PAPER_NAMES[d["dataset"]], {}
        probes.append((name, d.get("run", report).get("seal_rotation_ms")))
        for row, run in d.get("row_runs", {}).items():  # rows rerun later, maybe on another host
            later.setdefault(run.get("seal_rotation_ms"), []).append(row)
        probes += [(f"{name} ({', '.join(rows)})", ms) for ms, rows in later.items()]
    probes = [(name, ms) for name, ms in probes if ms is not None]
    if not probes:
        return ""
    return ("Machine speed at the start of each run (one SEAL rotation, N = 8192; HE time scales with it): "
            + ", ".join(f"{name} {ms:.2f} ms" for name, ms in probes) + ".\n")


def provenance(report: dict[str, Any]) -> str:
    """One line per dataset saying which run produced it, when the file was merged, and one more
    for each later run that replaced some of its rows (``--rows`` with ``--merge``)."""
    sets = [d for d in report["datasets"] if "run" in d]
    if len({r["commit"] + r["date"] for r in runs_of(report)}) <= 1:
        return ""
    lines = ["Datasets come from separate runs (`--merge`):", ""]
    for d in sets:
        r = d["run"]
        lines.append(f"- {PAPER_NAMES[d['dataset']]}: {r['date']}, commit `{r['commit']}`{_host(r)},"
                     f" `{r['command']}`")
        later: dict[tuple[str, str, str], list[str]] = {}
        for row, run in d.get("row_runs", {}).items():
            later.setdefault((run["date"], run["commit"], run["command"]), []).append(row)
        for rows in later.values():
            run = d["row_runs"][rows[0]]
            lines.append(f"  - rows {', '.join(rows)} from a later run: {run['date']}, commit `{run['commit']}`"
                         f"{_host(run)}, `{run['command']}`")
    return "\n".join(lines) + "\n"


def _host(run: dict[str, Any]) -> str:
    """``, on <device> — <cpu>, N cores, GPU <gpu> (load L)``: runs on other hosts or devices time
    differently, so each dataset names its own."""
    device = run.get("device") or {}
    if not isinstance(device, dict) or "cpu" not in device:
        return ""
    load = device.get("load_average_1m")
    return (", on " + (f"{device['device']} — " if "device" in device else "") + device["cpu"]
            + (f", {device['cores']} cores" if "cores" in device else "")
            + (f", GPU {device['gpu']}" if "gpu" in device else "")
            + (f" (load {load} at the start)" if load is not None else "") + workers_text(run))


def resumed_lines(report: dict[str, Any]) -> str:
    """The cells each dataset kept from a stopped run (``--resume``), with when and where they ran: their
    times come from an earlier process, maybe on another host or under another load than the header's."""
    lines = []
    for d in report["datasets"]:
        hosts: dict[str, list[dict[str, Any]]] = {}
        for cell in d.get("resumed", []):
            hosts.setdefault(_machine(cell.get("host")), []).append(cell)
        for machine, cells in hosts.items():
            dates = sorted(c["date"] for c in cells if c.get("date")) or ["an unrecorded date"]
            loads = sorted(c["host"]["load_average_1m"] for c in cells
                           if isinstance(c.get("host"), dict) and c["host"].get("load_average_1m") is not None)
            names = ", ".join(f"{c.get('row')} seed {c.get('seed')}" for c in cells)
            when = dates[0] + (f" to {dates[-1]}" if dates[-1] != dates[0] else "")
            load = (f", load {loads[0]}" + (f" to {loads[-1]}" if loads[-1] != loads[0] else "") + " as they ended"
                    if loads else "")
            lines.append(f"- {PAPER_NAMES[d['dataset']]}: {names} — ended {when} on {machine}{load}")
    if not lines:
        return ""
    return "\n".join(["Cells kept from a stopped run (`--resume`), timed by that run, not the one the header names:",
                      "", *lines]) + "\n"


def _machine(host: Any) -> str:
    """``<name> (<cpu>, N cores)`` of a kept cell's host record."""
    if not isinstance(host, dict):
        return "an unrecorded host"
    return f"{host.get('name') or 'an unnamed host'} ({host.get('cpu', '?')}, {host.get('cores', '?')} cores)"


__all__ = ["gpu_text", "graphs_text", "probe_lines", "provenance", "resumed_lines", "runs_of", "workers_text"]
