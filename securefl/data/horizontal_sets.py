"""Registry entries of the horizontal datasets (CHFL and GL), gathered from their modules."""

from __future__ import annotations

from securefl.data.chfl_sets import CHFL_ENTRIES
from securefl.data.entries import DatasetEntry
from securefl.data.gl_sets import GL_ENTRIES

HORIZONTAL_ENTRIES: tuple[DatasetEntry, ...] = (*CHFL_ENTRIES, *GL_ENTRIES)
