"""A user's own GL data: one CSV with a client column (natural clients), or one client's own CSV.

Each client keeps only its own columns (those not empty in all its rows), and columns
that pandas would read as text although they hold numbers are refused by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from securefl.data.gl_sets import MAX_ORDINAL_LEVELS, ClientTable, GLDataset
from securefl.data.tables import check_labelled, natural_clients, read_labelled_csv


def load_csv_clients(path: str | Path, *, label: str, client_column: str) -> GLDataset:
    """A user's CSV with natural clients: one client per value of ``client_column`` (dropped as a feature).

    Each client's rows are split per seed like the heart files (33% test, then 10% of
    the rest for validation). Binary if the label has two values overall.
    """
    path, frame = read_labelled_csv(path, label=label, also=("--client-column", client_column))
    if frame[label].dropna().nunique() < 2:
        raise InputError(f"--label: column {label!r} in {path} needs at least two classes")
    check_mixed_columns(path, frame, skip=(label, client_column))
    clients = []
    for name, rows in natural_clients(path, frame, "--client-column", client_column):
        rows = _own_columns(rows, label)
        if rows[label].dropna().nunique() < 2:  # one class: AUROC nan, a model that learns nothing
            found = "no label values" if rows[label].dropna().empty else "one class"
            raise InputError(f"client {name!r} ({client_column}) has {found} in column {label!r} of {path};"
                             " each client needs two or more")
        clients.append(ClientTable(name, label, full=rows))
    if len(clients) < 2:
        raise InputError(f"--client-column {client_column!r} in {path} gives {len(clients)} client(s); need 2+")
    check_labelled(path, frame, label)  # after the per-client check, which names a client with no labels at all
    return GLDataset(path.stem, tuple(clients), binary=frame[label].dropna().nunique() == 2)


def load_client_csv(path: str | Path, *, label: str, name: str) -> ClientTable:
    """One client's own CSV (every row its own, split per seed as :func:`load_csv_clients` splits
    each client), for a client that runs alone on its own machine (``securefl run gl --role``)."""
    path, frame = read_labelled_csv(path, label=label)
    if frame[label].dropna().empty:
        raise InputError(f"--label: column {label!r} in {path} has no values (client {name!r} has no labels)")
    check_labelled(path, frame, label)
    check_mixed_columns(path, frame, skip=(label,))
    return ClientTable(name, label, full=_own_columns(frame, label))


def _own_columns(rows: pd.DataFrame, label: str) -> pd.DataFrame:
    """A client's rows without the columns empty in all of them: in a shared CSV, the other
    clients' features. Dropped alike from a client's own file, so a client on its own machine
    trains on what it trains on in the one-machine run, whichever file it is given. A column
    pandas read as float only because other clients' rows left it empty is whole numbers again,
    as pandas reads it from this client's own file (so :func:`feature_kinds` types it alike)."""
    empty = [c for c in rows.columns if c != label and rows[c].isna().all()]
    rows = rows.drop(columns=empty)
    for column in rows.columns:
        values = rows[column]
        if column != label and pd.api.types.is_float_dtype(values) and values.notna().all() \
                and np.array_equal(values, np.round(values)) and np.abs(values).max() < 2**53:
            rows[column] = values.astype(np.int64)
    return rows


def check_mixed_columns(path: Path, frame: pd.DataFrame, *, skip: Sequence[str]) -> None:
    """Refuse a column of numbers with a few stray text cells (a typo, or "?" for a missing value).

    Such a column is read as text, so it would be encoded as categories: more than
    ``MAX_ORDINAL_LEVELS`` of them, with every unseen test value -1, i.e. quietly useless.
    """
    for column in frame.columns:
        values = frame[column]
        if column in skip or not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
            continue
        _refuse_separated_numbers(path, column, values)
        numbers = pd.to_numeric(values, errors="coerce")
        stray = values.notna() & numbers.isna()
        if stray.any() and numbers.notna().sum() >= 0.9 * values.notna().sum() \
                and numbers.nunique() > MAX_ORDINAL_LEVELS:
            row = int(np.flatnonzero(stray.to_numpy())[0])
            raise InputError(f"{path}: column {column!r} holds numbers but {int(stray.sum())} cell(s) that are not"
                             f" (first: {values.iloc[row]!r} in data row {row + 1}); leave a missing value empty")


def _refuse_separated_numbers(path: Path, column: str, values: pd.Series) -> None:
    """Refuse a column of numbers written with thousands separators ("86,555"): pandas reads it as
    text, so it would be encoded as categories, every unseen test value -1. (A few stray cells in
    a column of plain numbers are :func:`check_mixed_columns`' to name.)"""
    text = values.dropna().astype(str).str.strip()
    plain = pd.to_numeric(text, errors="coerce").notna()
    separated = text.str.fullmatch(r"[+-]?\d{1,3}(?:[,_ ]\d{3})+(?:\.\d*)?")
    if not separated.any() or plain.mean() >= 0.9 or (plain | separated).mean() < 0.9:
        return
    first = text[separated].index[0]
    row = int(np.flatnonzero(values.index == first)[0])
    raise InputError(f"{path}: column {column!r} holds numbers written with separators ({text[first]!r} in data"
                     f" row {row + 1}); write plain numbers (86555) so they are read as numbers")


__all__ = ["check_mixed_columns", "load_client_csv", "load_csv_clients"]
