"""``securefl datasets``: every registered dataset, the methods that take it, and whether its files are here.

With a data folder (--data-dir, or the SECUREFL_DATA environment variable) each
dataset's files are looked up where securefl run will look for them: ready (every file
present), missing (which file, and where it belongs) or bundled (no files needed).
--verify also checks every file's sha256 against the registry, as a run does before
it loads a dataset, and calls a file whose checksum differs damaged; its last line
says whether any file present is damaged, and it then exits with status 1 (a missing
file is not an error: that dataset is just not on this machine). --details adds
each dataset's description, source, licence and files. Without a data folder it lists
the registry only.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from securefl.commands import plain_text
from securefl.commands.run import VERTICAL_METHODS
from securefl.commands.run_horizontal import CHFL_METHODS, GL_METHODS
from securefl.data.entries import DatasetEntry
from securefl.data.registry import DATA_ENV, REGISTRY, data_dir, file_state
from securefl.results import check_output, write_json_atomically

METHODS = {"vertical": VERTICAL_METHODS, "chfl": (*CHFL_METHODS, "local"), "gl": (*GL_METHODS, "local"),
           "tdcd": ("tdcd",)}
"""What ``securefl run`` takes for each dataset kind; a GL entry marked ``pooled`` takes Centralized too."""


@dataclass(frozen=True)
class FileState:
    """One registered file under the data folder: ``present``, ``missing``, ``verified`` or ``damaged``."""

    path: str
    state: str


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("datasets", help="list the registered datasets and whether their files are here",
                              description=plain_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, help=f"the data folder (default: ${DATA_ENV})")
    p.add_argument("--verify", action="store_true",
                   help="also check each file's sha256 (reads every file); exit status 1 if any present is damaged")
    p.add_argument("--details", action="store_true", help="print description, source, licence and files")
    p.add_argument("--json", type=Path, help="write the list, with each file's state, here")
    p.set_defaults(handler=run)


def methods(entry: DatasetEntry) -> tuple[str, ...]:
    """The ``securefl run`` methods that take ``entry``."""
    return METHODS[entry.kind] + (("centralized",) if entry.pooled else ())


def file_states(entry: DatasetEntry, root: Path, *, verify: bool) -> tuple[FileState, ...]:
    """Where each of ``entry``'s files stands under ``root``."""
    return tuple(FileState(f.path, file_state(root, f, verify=verify)[0]) for f in entry.files)


def status(entry: DatasetEntry, files: tuple[FileState, ...] | None) -> str:
    """One phrase: bundled, ready, or what is wrong; ``files`` None: no data folder to look in."""
    if not entry.files:
        return "bundled (no files needed)"
    if files is None:
        return f"{_files(len(entry.files))}; no data folder to look in"
    bad = [f for f in files if f.state in ("missing", "damaged")]
    if not bad:
        verified = sum(f.state == "verified" for f in files)
        checked = "" if not verified else ", checksums verified" if verified == len(files) else \
            f", {verified} with a registered checksum verified"
        return f"ready: {_files(len(files))} present{checked}"
    first = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"{first.state}: {first.path}{more}, {len(bad)} of {_files(len(files))}"


def _files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def run(args: argparse.Namespace) -> int:
    if args.json is not None:
        check_output(args.json, "--json")
    root = data_dir(args.data_dir) if args.data_dir is not None or os.environ.get(DATA_ENV) else None
    rows = []
    for entry in sorted(REGISTRY.values(), key=lambda e: (list(METHODS).index(e.kind), e.name)):
        files = None if root is None or not entry.files else file_states(entry, root, verify=args.verify)
        rows.append((entry, files, status(entry, files)))
    width = max(len(e.name) for e, _, _ in rows)
    taken = max(len(", ".join(methods(e))) for e, _, _ in rows)
    print(f"data folder: {root}" if root else f"no data folder (--data-dir or ${DATA_ENV}): registry only")
    for entry, files, state in rows:
        print(f"{entry.name:<{width}}  {entry.paper:<4}  {entry.n_rows:>7,} rows  {', '.join(methods(entry)):<{taken}}"
              f"  {state}")
        if args.details:
            print(_details(entry, files))
    if args.json is not None:
        write_json_atomically(args.json, {"data_dir": str(root) if root else None, "verified": bool(args.verify),
                                          "datasets": [_record(e, f, s) for e, f, s in rows]})
    if not args.verify or root is None:
        return 0
    damaged = sorted({f.path for _, files, _ in rows for f in files or () if f.state == "damaged"})
    print(_verdict(damaged))
    return 1 if damaged else 0


def _verdict(damaged: list[str]) -> str:
    """The last line of ``--verify``: which registered files present are damaged, if any."""
    if not damaged:
        return "verify: every file present with a registered checksum matches it"
    shown = ", ".join(damaged[:3]) + (f" and {len(damaged) - 3} more" if len(damaged) > 3 else "")
    return f"verify: {_files(len(damaged))} damaged ({shown}): sha256 differs from the registry's"


def _details(entry: DatasetEntry, files: tuple[FileState, ...] | None) -> str:
    states = {f.path: f.state for f in files or ()}
    lines = [entry.description, f"source: {entry.source}", f"licence: {entry.licence}", f"parties: {entry.parties}"]
    lines += [f"file: {f.path}" + (f" ({states[f.path]})" if f.path in states else "") for f in entry.files]
    return "\n".join(f"    {line}" for line in lines)


def _record(entry: DatasetEntry, files: tuple[FileState, ...] | None, state: str) -> dict[str, Any]:
    states = {f.path: f.state for f in files or ()}
    return {"name": entry.name, "kind": entry.kind, "paper": entry.paper, "rows": entry.n_rows,
            "methods": list(methods(entry)), "status": state, "description": entry.description,
            "files": [{"path": f.path, "sha256": f.sha256, "state": states.get(f.path)} for f in entry.files]}


__all__ = ["FileState", "add_parser", "file_states", "methods", "run", "status"]
