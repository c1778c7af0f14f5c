"""Result files: one JSON object per run, written atomically.

Field names every script relies on (DESIGN.md, "Results"): ``method``, ``dataset``,
``seed``, ``device``, ``metrics``, ``seconds``, ``bytes``, ``settings``; for PSI,
``intersection_size``, ``seconds``, ``bytes``. Add fields freely, rename none.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from protocols.errors import InputError


def write_json_atomically(path: str | os.PathLike, obj: dict[str, Any]) -> Path:
    """Write ``obj`` to ``path`` so a reader never sees half a file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: --json names a folder, expected a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp",
                                     prefix=f".{path.name}.") as fh:
        json.dump(obj, fh, indent=2)
        fh.write("\n")
        tmp = fh.name
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path
