"""Vertical datasets from one CSV per party, and the pre-flight overlap check.

Every file is read as text (:func:`securefl.data.tables.read_party_csv`), so IDs
are the exact strings in the file. Each other column is then checked and
converted: features to float64, the label to int64 in {0, 1}. Every error is one
line that names the file and the column.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from securefl.data.tables import exact_ids, read_party_csv
from securefl.data.vertical import PartyTable, VerticalDataset

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
"""Cell texts (after stripping blanks, case-insensitive) that count as missing values."""


def load_party_csvs(paths: Sequence[str | os.PathLike], *, id_column: str, label_column: str,
                    names: Sequence[str] | None = None, dataset: str = "csv") -> VerticalDataset:
    """A vertical dataset from one CSV per party; the one file with ``label_column`` is the active party.

    Parties are named ``names`` (one per file, in file order) or, by default,
    "active" and "passive" ("passive1", "passive2", ... for several, in file order).
    A label with two values other than {0, 1} is mapped sorted-first to 0 and the
    mapping is recorded in the dataset's ``notes``. Raises :class:`InputError`
    (:class:`~protocols.errors.DuplicateIDError` for repeated IDs) naming the file.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise InputError(f"paths must be a list of party files, got a single path {paths!r}")
    files = [Path(p) for p in paths]
    if len(files) < 2:
        raise InputError(f"a vertical dataset needs at least two party files (one with label column"
                         f" {label_column!r}), got {len(files)}")
    if names is not None and len(names) != len(files):
        raise InputError(f"got {len(names)} party names for {len(files)} files")
    frames = [read_party_csv(path, id_column) for path in files]
    active_index = _label_holder(files, frames, label_column)
    party_names = list(names) if names is not None else _default_names(len(files), active_index)
    tables: list[PartyTable] = []
    notes: list[str] = []
    for index, (path, frame) in enumerate(zip(files, frames)):
        label = label_column if index == active_index else None
        table, table_notes = party_from_frame(frame, source=str(path), name=party_names[index],
                                              id_column=id_column, label_column=label)
        tables.append(table)
        notes.extend(table_notes)
    notes.extend(f"party {n!r} read from {p}" for n, p in zip(party_names, files))
    result = VerticalDataset(name=dataset, active=tables[active_index],
                             passive=tuple(t for i, t in enumerate(tables) if i != active_index),
                             notes=tuple(notes))
    check_overlap(result, sources={n: str(p) for n, p in zip(party_names, files)})
    return result


def _label_holder(files: list[Path], frames: list[pd.DataFrame], label_column: str) -> int:
    """Index of the one file that has ``label_column``; none or several is an error."""
    holders = [i for i, frame in enumerate(frames) if label_column in frame.columns]
    if not holders:
        listed = ", ".join(map(str, files))
        raise InputError(f"no file has label column {label_column!r} ({listed}); exactly one party"
                         " (the active party) must hold the label")
    if len(holders) > 1:
        listed = ", ".join(str(files[i]) for i in holders)
        raise InputError(f"label column {label_column!r} is in {len(holders)} files ({listed});"
                         " exactly one party (the active party) may hold the label")
    return holders[0]


def _default_names(n_files: int, active_index: int) -> list[str]:
    """"active" for the label holder; "passive", or "passive1".. in file order for several."""
    names, k = [], 0
    for index in range(n_files):
        if index == active_index:
            names.append("active")
        else:
            k += 1
            names.append("passive" if n_files == 2 else f"passive{k}")
    return names


def party_from_frame(frame: pd.DataFrame, *, source: str, name: str, id_column: str,
                     label_column: str | None = None) -> tuple[PartyTable, tuple[str, ...]]:
    """One party's table from a text frame: IDs as read, every other column a float64 feature.

    ``label_column``, when given, becomes the int64 labels; the returned notes
    describe any relabelling to {0, 1}. ``source`` names the file in errors.
    """
    if len(frame) == 0:
        raise InputError(f"{source}: no data rows (only a header)")
    ids = exact_ids(frame[id_column], source, id_column)
    columns = [c for c in frame.columns if c not in (id_column, label_column)]
    if not columns:
        held = f"{id_column!r}" + (f" and {label_column!r}" if label_column else "")
        raise InputError(f"{source}: no feature columns besides {held}")
    features = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        features[:, j] = numeric_column(frame[column], source, str(column))
    labels, notes = (None, ()) if label_column is None else binary_labels(frame[label_column], source,
                                                                         label_column)
    table = PartyTable(name=name, ids=tuple(ids), features=features,
                       feature_names=tuple(map(str, columns)), labels=labels)
    return table, notes


def _check_missing(text: pd.Series, source: str, name: str) -> None:
    """Raise if any cell is empty or a missing-value marker such as NA."""
    missing = text.str.lower().isin(MISSING_TOKENS)
    if missing.any():
        raise InputError(f"{source}: column {name!r} has {int(missing.sum())} missing or empty cell(s)"
                         f" (first in data row {_first_row(missing)}); fill or drop them first")


def _first_row(mask: pd.Series) -> int:
    """1-based data row (header not counted) of the first True in ``mask``."""
    return int(np.flatnonzero(mask.to_numpy())[0]) + 1


def numeric_column(column: pd.Series, source: str, name: str) -> np.ndarray:
    """A text column as finite float64 values, or an error naming file, column and a bad cell."""
    text = column.str.strip()
    _check_missing(text, source, name)
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna()
    if bad.any():
        row = _first_row(bad)
        raise InputError(f"{source}: column {name!r} is not numeric"
                         f" ({text.iloc[row - 1]!r} in data row {row})")
    array = values.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise InputError(f"{source}: column {name!r} holds infinite values")
    return array


def binary_labels(column: pd.Series, source: str, name: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """A text label column as int64 in {0, 1}, with a note when the values were mapped.

    Numeric labels are compared as numbers ("1" and "1.0" are the same class),
    other labels as text; of two distinct values the smaller becomes 0.
    """
    text = column.str.strip()
    _check_missing(text, source, name)
    numbers = pd.to_numeric(text, errors="coerce")
    keys = text if numbers.isna().any() else numbers
    distinct = sorted(keys.unique())
    if len(distinct) != 2:
        shown = f" ({', '.join(_show(v) for v in distinct)})" if len(distinct) <= 5 else ""
        raise InputError(f"label column {name!r} in {source} has {len(distinct)} distinct"
                         f" value{'s' if len(distinct) != 1 else ''}{shown}; STFL needs a binary label")
    labels = (keys == distinct[1]).to_numpy(dtype=np.int64)
    if keys is numbers and distinct == [0, 1]:
        return labels, ()
    note = (f"label column {name!r} in {source}: {_show(distinct[0])} -> 0,"
            f" {_show(distinct[1])} -> 1")
    return labels, (note,)


def _show(value: object) -> str:
    """A label value for messages: numbers without a trailing .0, text quoted."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{value:g}" if isinstance(value, (float, np.floating)) else repr(str(value))


def check_overlap(dataset: VerticalDataset, *, sources: Mapping[str, str] | None = None) -> int:
    """Check that every passive party shares IDs with the active party; return the all-party count.

    Raises :class:`InputError` naming the party (and its file, from ``sources``:
    party name -> file) when a passive party has no ID in common with the active
    party, or when no ID is held by every party, since then no row can be trained.

    This compares ID sets in the clear, so it is a local pre-flight check for
    simulation and the CLI, where every party's file is on this machine. In a
    deployment no party sees another's IDs: each learns the overlap from PSI
    (an empty intersection) instead.
    """
    sources = sources or {}

    def where(name: str) -> str:
        return f" ({sources[name]})" if name in sources else ""

    active = dataset.active
    common = set(active.ids)
    for party in dataset.passive:
        ids = set(party.ids)
        if ids.isdisjoint(active.ids):
            raise InputError(f"passive party {party.name!r}{where(party.name)} has no IDs in common with"
                             f" active party {active.name!r}{where(active.name)}; check that both use the"
                             " same ID column and format (IDs are compared as exact strings)")
        common &= ids
    if not common:
        raise InputError(f"dataset {dataset.name!r}: no ID is held by all {len(dataset.parties)} parties,"
                         " so there is no row to train on")
    return len(common)
