"""Registry entries of the horizontal datasets (CHFL and GL), gathered from their modules."""

from __future__ import annotations

from securefl.data.entries import DatasetEntry

HORIZONTAL_ENTRIES: tuple[DatasetEntry, ...] = ()
