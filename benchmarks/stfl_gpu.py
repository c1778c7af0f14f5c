"""The GPU run ``benchmarks.stfl`` shows beside Table III: which file, and checking it is one.

``--gpu-json`` names a ``--device cuda`` result of the same benchmark; the result file
records it, so a later ``--merge`` or ``--render-only`` run keeps the GPU columns.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import stfl_merge
from benchmarks.common import read_result


def gpu_beside(cfg: Any, stored: dict[str, Any] | None) -> tuple[Any, dict[str, Any] | None]:
    """The GPU run to show beside Table III: ``--gpu-json``, else the one ``stored`` (the file a
    ``--merge`` or ``--render-only`` run rewrites) records, so extending a report keeps its columns."""
    if cfg.gpu_json is None and stored and stored.get("gpu_json"):
        path = Path(stored["gpu_json"])
        if not path.is_file():
            print(f"benchmarks.stfl: the GPU run {path} recorded in {cfg.json_path} is gone; Table III "
                  "goes without GPU columns (pass --gpu-json to show another)", file=sys.stderr)
            return cfg, None
        for option, output in (("--json", cfg.json_path), ("--markdown", cfg.markdown_path)):
            if Path(output).resolve() == path.resolve():
                raise SystemExit(f"{option} {output} would replace the GPU run {path} recorded in {cfg.json_path};"
                                 f" write it to another file")
        cfg = replace(cfg, gpu_json=path)
    return cfg, (gpu_report(cfg.gpu_json, quick=cfg.quick, epochs=cfg.epochs) if cfg.gpu_json is not None else None)


def gpu_report(path: Path, *, quick: bool, epochs: int) -> dict[str, Any]:
    """The ``--gpu-json`` file: a ``--device cuda`` result of this benchmark, quick or full and of as many
    epochs as the table it goes beside (its times would not compare otherwise); else SystemExit."""
    gpu = stfl_merge.name_stfl_rows(read_result(path, "--gpu-json", "stfl", {"datasets": list}))
    if not str((gpu.get("device") or {}).get("device", "")).startswith("cuda"):
        raise SystemExit(f"--gpu-json: {path} is not a --device cuda run")
    theirs = (bool(gpu.get("quick")), (gpu.get("settings") or {}).get("epochs", epochs))
    if theirs != (quick, epochs):
        raise SystemExit(f"--gpu-json: {path} is a {'--quick ' if theirs[0] else ''}run of {theirs[1]} epochs;"
                         f" this table is a {'--quick ' if quick else ''}run of {epochs}")
    return gpu


__all__ = ["gpu_beside", "gpu_report"]
