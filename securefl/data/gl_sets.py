"""GL datasets (registry entries and loaders). Filled in by the GL work."""

from __future__ import annotations

from securefl.data.entries import DatasetEntry

GL_ENTRIES: tuple[DatasetEntry, ...] = ()
