"""What every benchmark records beside its numbers, and how it writes them.

Each result file carries the device, commit, date, settings and whether the run
was ``--quick``, so a committed number can always be traced to the script and
settings that produced it.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

RESULTS_PATH = "benchmarks/results"
"""Where results live, relative to the repository root."""
RESULTS_DIR = Path(__file__).resolve().parent.parent / RESULTS_PATH


def dataset_names(parser: argparse.ArgumentParser, value: str, known: Collection[str]) -> tuple[str, ...]:
    """The comma-separated ``--datasets`` value as names; an unknown one is a one-line usage error (exit 2)."""
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown dataset {unknown[0]!r}; choose from {', '.join(known)}")
    if not names:
        parser.error("--datasets names no dataset")
    return names


def count_option(text: str) -> int:
    """argparse type of a count option (seeds, epochs, workers, ...): an int no larger than any run
    takes, so a huge value is a usage error, not an overflow deep inside torch or a process pool.
    Each script checks its own lower bound."""
    from securefl.runtime.validation import MAX_COUNT

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT}, got {text}")
    return value


def device_name(parser: argparse.ArgumentParser, value: str) -> str:
    """``--device`` checked before any work: cpu, or a CUDA device this machine has; else a
    one-line usage error (exit 2), not a traceback from deep inside a run."""
    from protocols.errors import InputError
    from securefl.runtime import resolve_device

    try:
        resolve_device(value)
    except InputError as err:
        parser.error(str(err))
    return value


def writable(parser: argparse.ArgumentParser, inputs: dict[str, Path | None] | None = None,
             beside: dict[str, Path] | None = None, **paths: Path | None) -> None:
    """Each ``--option path`` given (keyword: option name without dashes) can be written, and none is
    another output or one of the run's ``inputs`` (the files it reads, keyed the same way, or by a
    positional argument's name); else a one-line usage error before any run, not an error after hours
    of it. ``beside``: files the run writes that no option names, by description (a PNG beside the
    Markdown)."""
    from protocols.errors import InputError
    from securefl.results import check_apart, check_output

    outputs = [(_label(parser, name), path) for name, path in paths.items() if path is not None]
    outputs += [(label, path) for label, path in (beside or {}).items()]
    if paths.get("json") is not None and {"markdown", "md"} & paths.keys() \
            and paths.get("markdown", paths.get("md")) is None:  # the Markdown goes beside the JSON
        outputs.append(("--markdown (default: the --json path with .md)", Path(paths["json"]).with_suffix(".md")))
    try:
        for option, path in outputs:
            check_output(path, option)
        # `--json r.md` wrote the Markdown over the JSON, `--json gpu.json --gpu-json gpu.json` the run over
        # the file it read, both exit 0
        check_apart(outputs, [(_label(parser, name), path) for name, path in (inputs or {}).items()])
    except InputError as err:
        parser.error(str(err))


def _label(parser: argparse.ArgumentParser, name: str) -> str:
    """How an error names the file ``name`` stands for: its option (``--gpu-json``), or its
    positional argument (``argument a``)."""
    positional = [a for a in parser._actions if a.dest == name and not a.option_strings]
    return f"argument {positional[0].metavar or name}" if positional else f"--{name.replace('_', '-')}"


def read_result(path: Path, flag: str, benchmark: str, fields: dict[str, type]) -> dict[str, Any]:
    """A stored result file of ``benchmark`` (its top-level ``fields`` of the given types), for
    ``flag`` (--merge, --render-only, --reuse); else SystemExit with one line saying why not.

    Files written before a benchmark recorded its name pass on their fields alone.
    """
    try:
        old = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise SystemExit(f"{flag}: {path} does not exist") from None
    except (OSError, ValueError) as err:
        raise SystemExit(f"{flag}: {path} is not a readable result file: {err}") from None
    if not isinstance(old, dict) or old.get("benchmark", benchmark) != benchmark or not all(
            isinstance(old.get(name), kind) for name, kind in fields.items()):
        raise SystemExit(f"{flag}: {path} is not a {benchmark} result file")
    return old


def git_commit(root: Path | None = None) -> str:
    """The checked-out commit, with ``+dirty`` when tracked files differ from it.

    Files under ``benchmarks/results/`` do not count: a benchmark run in chunks
    (``--merge``) rewrites its own result files between chunks, while the code that
    produced them is still the commit's.
    """
    root = Path(__file__).resolve().parent.parent if root is None else root
    # a copy of the tree sent to a lent GPU machine: the caller may name the commit it copied
    named = os.environ.get("SECUREFL_COMMIT", "").strip()
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                f":(exclude){RESULTS_PATH}"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # no .git: the result says git did not confirm it
        return f"{named} (named by SECUREFL_COMMIT; no git checkout)" if named else "unknown"
    found = sha + ("+dirty" if dirty else "")
    if named and named != found:
        # a .git that came along with the copy may be older than the tree (seen on a lent GPU
        # machine: git said the session's first commit while the tree was a later one)
        return f"{named} (named by SECUREFL_COMMIT; the checkout's git says {found})"
    return found


def uncommitted_code(root: Path | None = None) -> str:
    """A digest of what the code differs from its commit by: the diff of tracked files and the
    untracked ``.py`` files, results excluded; "" for a clean tree or no git. ``+dirty`` alone
    says a tree differs, not how, so two runs on two different edits would look alike."""
    root = Path(__file__).resolve().parent.parent if root is None else root
    scope = ["--", ".", f":(exclude){RESULTS_PATH}"]
    try:
        diff = subprocess.run(["git", "diff", "HEAD", "--binary", *scope], cwd=root, capture_output=True,
                              check=True).stdout
        new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z", *scope], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        return ""
    digest = hashlib.sha256(diff)
    for name in sorted(n for n in new if n.endswith(".py")):
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return digest.hexdigest()[:16] if diff or any(n.endswith(".py") for n in new) else ""


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def device_info(device: str = "cpu") -> dict[str, Any]:
    """The machine a benchmark ran on: CPU, core count, memory and the GPU if used."""
    info: dict[str, Any] = {"device": device, "cpu": cpu_name(), "cores": os.cpu_count(),
                            "python": platform.python_version(), "platform": platform.platform()}
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    try:
        # other work on the machine slows every timing; a result says how busy the machine was
        info["load_average_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    if device.startswith("cuda"):
        import torch

        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def metadata(*, settings: dict[str, Any], quick: bool, device: str = "cpu",
             argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The header every result file starts with."""
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "quick": quick,
        "device": device_info(device),
        "settings": settings,
        "command": "python -m " + shlex.join(argv) if argv else None,  # quoted: pastes back as it ran
    }


def config_report(benchmark: str, cfg: Any, argv: Sequence[str] | None,
                  paths: Collection[str] = ("json_path", "markdown_path", "data_dir"),
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`metadata` for a dataclass ``cfg`` (every field but ``paths``, plus ``extra``, as its
    settings), named ``benchmark``, with the command as typed (``argv`` None: this process's own).
    ``cfg.device`` names the device; a config without one (a CPU-only benchmark) is on the CPU."""
    from dataclasses import asdict

    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items() if k not in paths}
    settings.update(extra or {})
    return named_report(benchmark, settings=settings, quick=cfg.quick, argv=argv,
                        device=getattr(cfg, "device", "cpu"))


def named_report(benchmark: str, *, settings: dict[str, Any], quick: bool, argv: Sequence[str] | None,
                 device: str = "cpu") -> dict[str, Any]:
    """:func:`metadata` named ``benchmark``, with the command as typed (``argv`` None: this
    process's own), for a benchmark whose settings are not one dataclass."""
    report = metadata(settings=settings, quick=quick, device=device,
                      argv=[f"benchmarks.{benchmark}", *(sys.argv[1:] if argv is None else argv)])
    report["benchmark"] = benchmark
    return report


def run_main(main: Callable[[], int | None], name: str) -> int:
    """``main()``'s exit status, with Ctrl-C ending in one line and status 130, and bad input
    (:class:`~protocols.errors.InputError`) in one line and status 2.

    A benchmark writes its files (atomically) only after its last job, so an interrupted
    run leaves every result file as it was; the line says so.
    """
    from protocols.errors import InputError
    from protocols.lifecycle import interrupted_status, stopped_by, terminate_like_interrupt
    from securefl.runtime.preload import preload
    from securefl.runtime.reproducible import reproducible_blas

    reproducible_blas()  # the same seed gives the same numbers on every run (before any matrix product)
    preload()  # torch's first optimizer imports its compiler stack: not inside the first run's time
    try:
        with terminate_like_interrupt():  # `kill PID` stops the workers and leaves the files as Ctrl-C does
            return int(main() or 0)
    except KeyboardInterrupt as exc:
        print(f"{name}: {stopped_by(exc)}; no result file was written", file=sys.stderr)
        return interrupted_status(exc)
    except InputError as err:  # bad input found after parsing (a setting a config refuses, a data file)
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2


def write_json(path: str | os.PathLike, obj: dict[str, Any]) -> Path:
    """Write ``obj`` as strict JSON, atomically (a reader never sees half a file).

    A nan or inf (a 95% CI over one seed, the AUROC of a one-class test set) is written as
    ``null``, as the CLI does: ``NaN`` is not JSON, and jq or a JavaScript reader rejects it.
    """
    from securefl.results import write_json_atomically

    return write_json_atomically(path, obj)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write text atomically (nothing left behind if the write fails or is interrupted)."""
    from securefl.results import write_text_atomically

    return write_text_atomically(path, text, option="--markdown")


def markdown_header(title: str, meta: dict[str, Any]) -> str:
    """The lines a Markdown result starts with: what, where, when, which commit."""
    dev = meta["device"]
    quick = " — **quick run (reduced sizes; not the full benchmark)**" if meta["quick"] else ""
    lines = [
        f"# {title}{quick}",
        "",
        f"- date: {meta['date']}",
        f"- commit: `{meta['commit']}`",
        f"- device: {dev['device']} — {dev['cpu']}, {dev['cores']} cores"
        + (f", {dev['memory_gib']} GiB" if "memory_gib" in dev else "")
        + (f", GPU {dev['gpu']}" if "gpu" in dev else "")
        + (f"; load average {dev['load_average_1m']} at the start" if "load_average_1m" in dev else ""),
        f"- settings: `{json.dumps(meta['settings'], sort_keys=True)}`",
    ]
    if meta.get("command"):
        lines.append(f"- command: `{meta['command']}`")
    return "\n".join(lines) + "\n"


def rendered_stamp() -> dict[str, Any]:
    """When and at which commit ``--render-only`` re-derived a stored result's tables."""
    return {k: v for k, v in metadata(settings={}, quick=False).items() if k in ("date", "commit")}


def rendered_line(meta: dict[str, Any]) -> str:
    """The header line saying a result's tables were re-derived (empty for a file as its run wrote it)."""
    stamp = meta.get("rendered")
    if not stamp:
        return ""
    return (f"- tables re-derived from the runs on {stamp['date']} at commit `{short_commit(stamp.get('commit'))}`"
            " (`--render-only`; nothing was rerun)\n")


def short_commit(commit: str | None) -> str:
    """A commit's first 12 hex digits, keeping its ``+dirty`` mark."""
    return (commit or "unknown")[:12] + ("+dirty" if (commit or "").endswith("+dirty") else "")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"
