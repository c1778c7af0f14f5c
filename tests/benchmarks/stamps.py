"""Test helper: a ``--render-only`` Markdown less its one "re-derived" line."""

STAMP = "- tables re-derived from the runs on"


def without_stamp(text: str) -> str:
    """``text`` without the line ``--render-only`` adds; an AssertionError unless there is exactly one."""
    lines = text.splitlines(keepends=True)
    stamps = [i for i, line in enumerate(lines) if line.startswith(STAMP)]
    assert len(stamps) == 1, f"expected one re-derived line, found {len(stamps)}"
    return "".join(lines[:stamps[0]] + lines[stamps[0] + 1:])
