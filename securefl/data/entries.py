"""What the registry knows about a dataset: its files, checksums, source, licence and parties."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

Loader = Callable[[Sequence[Path]], Any]
"""Builds a dataset from the verified paths of the entry's ``files``, in that order."""

KINDS = ("vertical", "chfl", "gl", "tdcd")
"""vertical: a VerticalDataset (STFL, HE-VFL); chfl: one table whose features CHFL splits into
common and unique; gl: natural clients with their own files (Global Layers); tdcd: one table
that silos split by columns and each silo's clients by rows (TieredTable)."""


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: its path under the data folder (POSIX, relative) and sha256.

    ``sha256=None`` marks a file this project has never seen (a dataset registered
    with its standard file name so it runs wherever the file exists); it is then
    loaded without a checksum, and its loader checks the shape instead.
    """

    path: str
    sha256: str | None


@dataclass(frozen=True)
class DatasetEntry:
    """Everything known about one dataset, and how to load it."""

    name: str
    paper: str
    paper_name: str
    description: str
    files: tuple[DataFile, ...]
    source: str
    licence: str
    parties: str
    n_rows: int
    loader: Loader = field(repr=False, compare=False)
    kind: str = "vertical"
    available: bool = True
    """False for datasets registered with their standard files that ../shared/data lacks (not run here)."""
    pooled: bool = False
    """GL only: a centralized baseline can pool the clients (pooled files, or columns every client shares);
    ``baselines.gl_baselines.pooled_table`` holds the rule, and a test checks this flag against it."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"DatasetEntry.kind must be one of {KINDS}, got {self.kind!r}")
        if self.pooled and self.kind != "gl":
            raise ValueError(f"DatasetEntry.pooled is a GL flag; {self.name!r} is {self.kind!r}")
