"""CHFL datasets (registry entries and loaders). Filled in by the CHFL work."""

from __future__ import annotations

from securefl.data.entries import DatasetEntry

CHFL_ENTRIES: tuple[DatasetEntry, ...] = ()
