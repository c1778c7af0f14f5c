"""Result files: one JSON object per run, written atomically.

Field names every script relies on (DESIGN.md, "Results"): ``method``, ``dataset``,
``seed``, ``device``, ``metrics``, ``seconds``, ``bytes``, ``settings``; for PSI,
``intersection_size``, ``seconds``, ``bytes``. Add fields freely, rename none.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from protocols.errors import InputError


def real_target(path: str | os.PathLike, option: str) -> Path:
    """Where writing ``path`` puts its bytes: the file a symlink names (the link stays a link).
    InputError for a device, pipe or socket, which an atomic replace would swap for a file
    (``--json /dev/null`` run as root would replace the system's /dev/null)."""
    real = Path(os.path.realpath(path))
    if real.exists() and not (real.is_file() or real.is_dir()):
        raise InputError(f"{option} {path}: not a regular file (a device, pipe or socket); name a file")
    return real


def check_output(path: str | os.PathLike, option: str, *, folder: bool = False) -> None:
    """Before any work: InputError unless ``path`` (a file, or a folder with ``folder``) can be
    written, so a long run does not end in an error about where to put its result."""
    shown, path = path, real_target(path, option)
    if path.exists() and path.is_dir() != folder:
        raise InputError(f"{option} {shown}: " + ("exists and is not a folder" if folder
                                                  else "names a folder, expected a file"))
    parent = path.parent
    while not parent.exists():  # folders that do not exist yet are made when writing
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{option} {shown}: {parent} is not a folder")
    try:  # a real attempt: permission bits say yes to root, and e.g. /proc refuses anyway
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise InputError(f"{option} {shown}: cannot write in {parent} ({exc.strerror or exc})") from None


def check_apart(outputs: Sequence[tuple[str, Any]], inputs: Sequence[tuple[str, Any]]) -> None:
    """Before any work: InputError when an output (option, path) is one of the input files or
    another output, so a run never replaces the data it reads (``--json`` naming the input CSV).
    ``None`` paths are skipped."""
    seen: dict[Path, tuple[str, Any]] = {}
    for option, path in inputs:
        if path is not None:
            seen.setdefault(Path(path).resolve(), (option, path))
    for option, path in outputs:
        if path is None:
            continue
        key = Path(path).resolve()
        if key in seen:
            other, named = seen[key]
            raise InputError(f"{option} {path} would replace {other} {named}; write it to another file")
        seen[key] = (option, path)


def check_distinct_inputs(inputs: Sequence[tuple[str, Any]], *, only: Sequence[str] | None = None) -> None:
    """Before any work: InputError when two inputs (option, path) name one file -- a passive
    party's CSV given twice, or the ``--identity`` private key also given as a data file (its
    one line would be read as a CSV header, and error messages name header cells). With
    ``only``, just the pairs in which one of those options takes part. ``None`` paths are skipped."""
    seen: dict[Path, tuple[str, Any]] = {}
    for option, path in inputs:
        if path is None:
            continue
        key = Path(path).resolve()
        if key in seen and (only is None or option in only or seen[key][0] in only):
            other, named = seen[key]
            raise InputError(f"{option} {path} is also given as {other} {named}; name each file once")
        seen.setdefault(key, (option, path))


def strict_json(value: Any) -> Any:
    """``value`` with every nan or inf float as None: JSON has no NaN, and strict readers (jq,
    JavaScript, most other languages) reject the ``NaN`` Python would write, e.g. for the
    AUROC of a client whose test rows hold one class."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def write_json_atomically(path: str | os.PathLike, obj: dict[str, Any]) -> Path:
    """Write ``obj`` to ``path`` as strict JSON (see :func:`strict_json`) so a reader never sees
    half a file."""
    if Path(path).is_dir():
        raise InputError(f"{path}: --json names a folder, expected a file")
    return write_text_atomically(path, json.dumps(strict_json(obj), indent=2, allow_nan=False) + "\n")


def write_text_atomically(path: str | os.PathLike, text: str, *, option: str = "--json") -> Path:
    """Write ``text`` to ``path`` (through a symlink, to the file it names) so that a reader sees
    the old file or the new one, never half of either; whatever stops the write (a full disk,
    Ctrl-C, SIGTERM) leaves no temporary file behind. InputError naming ``path`` on OSError."""
    target, tmp = real_target(path, option), None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp",
                                         prefix=f".{target.name}.") as fh:
            tmp = fh.name
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:  # name the user's file, not the temporary one
        raise InputError(f"{path}: cannot write the result: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return Path(path)
