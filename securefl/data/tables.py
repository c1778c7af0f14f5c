"""Reading one party's CSV and writing aligned rows, with one-line errors.

Party files are read with every column as text, so IDs are compared as the exact
strings in the file and every cell is written back as the exact text read (no float
reformatting, no "NA" turned into a missing value); quoting is redone only where CSV
needs it, and lines end in LF.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from protocols.psi import check_ids
from securefl.results import real_target

OTHER_DELIMITERS = (";", "\t", "|")
HEX_RUN = re.compile(r"[0-9a-fA-F]{32,}")  # a key's hex (keygen writes 64 digits); never echoed
MAX_FRACTIONAL_CLASSES = 50
"""A classifying label may hold at most this many distinct fractional values (GL's limit for categories)."""


def _read(path: Path, **options: Any) -> pd.DataFrame:
    """``pd.read_csv`` with one-line errors (:func:`check_header` then checks the header itself)."""
    try:
        frame = pd.read_csv(path, **options)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: file is empty, expected a CSV with a header row") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: cannot read CSV: {first}") from None
    return frame


def read_text_column(path: str | os.PathLike, column: str) -> pd.Series:
    """One column of ``path`` as the exact text in the file (IDs: "007" stays "007", "" stays "")."""
    return _read(Path(path), usecols=[column], dtype=str, keep_default_na=False, na_filter=False)[column]


def natural_clients(path: Path, frame: pd.DataFrame, option: str, column: str) -> list[tuple[str, pd.DataFrame]]:
    """The rows of each client that ``column`` names, by the name's exact text ("01" and "1" are
    two clients, where pandas' numbers merged them), numeric names in numeric order; every other
    column as pandas typed it. A row naming no client (an empty cell) is an error."""
    names = read_text_column(path, column)
    empty = names.str.strip() == ""
    if empty.any():  # groupby would drop these rows without a word
        raise InputError(f"{option} {column!r}: {int(empty.sum())} rows of {path} name no client"
                         f" (first: data row {int(np.flatnonzero(empty.to_numpy())[0]) + 1})")
    rows = frame.drop(columns=column).groupby(names.to_numpy(), sort=False)
    return sorted(((str(name), part.reset_index(drop=True)) for name, part in rows), key=lambda g: _name_order(g[0]))


def _name_order(name: str) -> tuple[int, float, str]:
    try:
        number = float(name)
    except ValueError:
        number = math.nan
    return (0, number, name) if math.isfinite(number) else (1, 0.0, name)


def exact_ids(column: pd.Series, source: str, name: str) -> list[str]:
    """A text ID column as a list; empty or blank IDs (only spaces: a cell left empty in a spreadsheet)
    and duplicates are errors naming ``source`` and the column. Other IDs are kept exactly, untrimmed."""
    empty = column.str.strip() == ""
    if empty.any():
        raise InputError(f"{source}: column {name!r} has {int(empty.sum())} empty or blank ID cell(s)"
                         f" (first in data row {int(np.flatnonzero(empty.to_numpy())[0]) + 1})")
    return check_ids(column.tolist(), source=source)


def read_party_csv(path: str | os.PathLike, id_column: str, *, unnamed_first: bool = False) -> pd.DataFrame:
    """Read ``path`` as text columns and check that ``id_column`` exists. ``unnamed_first``: a
    registered file whose first column (its IDs) has no name, as give_credit's."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    frame = _read(path, dtype=str, keep_default_na=False, na_filter=False)
    check_header(path, unnamed_first=unnamed_first)
    if id_column not in frame.columns:
        raise InputError(f"{path}: no column {id_column!r} (columns: {shown_columns(frame.columns, 10)})"
                         f"{delimiter_hint(frame)}")
    return frame


def read_labelled_csv(path: str | os.PathLike, *, label: str, also: tuple[str, str] | None = None,
                      features: Sequence[str] | None = None, classify: bool = True) -> tuple[Path, pd.DataFrame]:
    """A user's ``--csv`` file (values typed by pandas) with its ``--label`` column, and ``also``
    (an option and the column it names, e.g. ``("--client-column", "site")``), checked.

    Infinite values are refused in ``features`` (default: every column); the other
    columns are left to the caller, which does not read them. ``classify``: the label
    names classes, so fractional numbers there are refused (:func:`check_class_label`).
    """
    path = Path(path)
    if also and also[1] == label:
        raise InputError(f"{also[0]} and --label both name column {label!r}; they must name different columns")
    if not path.is_file():
        raise InputError(f"--csv file {path} not found")
    frame = _read(path)
    if frame.empty and len(frame.columns):
        raise InputError(f"{path}: no data rows (only a header)")
    for option, column in (("--label", label), *([also] if also else [])):
        if column not in frame.columns:
            raise InputError(f"{option}: column {column!r} not in {path} (columns: {shown_columns(frame.columns)})"
                             f"{delimiter_hint(frame)}")
    check_header(path)
    named = None if features is None else set(features)
    for column in frame.columns if named is None else [c for c in frame.columns if c in named]:
        values = frame[column]
        if pd.api.types.is_float_dtype(values) and np.isinf(values.to_numpy(np.float64)).any():
            raise InputError(f"{path}: column {column!r} holds infinite values")
    if classify:
        check_class_label(path, frame, label)
    return path, frame


def check_header(path: Path, *, unnamed_first: bool = False) -> None:
    """Refuse a header that names a column twice (pandas would quietly rename the second ``x.1``),
    leaves one unnamed (pandas would call it ``Unnamed: N``: a table index written with the file
    becomes a feature; ``unnamed_first`` allows it in the first column), or has fewer fields than
    the first data row holds: when every row has more (a trailing comma), pandas makes their first
    fields the index, and every column would shift to the left."""
    try:
        raw = pd.read_csv(path, header=None, nrows=2, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.ParserError:
        raise InputError(f"{path}: data rows hold more fields than the header names (a trailing comma?);"
                         " give every row as many fields as the header") from None
    names = raw.iloc[0].tolist() if len(raw) else []
    stripped = [name.strip() for name in names][1 if unnamed_first else 0:]
    if "" in stripped:  # pandas would name it "Unnamed: N" and train on it
        position = stripped.index("") + 1 + (1 if unnamed_first else 0)
        raise InputError(f"{path}: column {position} of the header has no name (a table index written"
                         " with it? pandas: to_csv(index=False)); name every column")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{path}: column name {name!r} appears {names.count(name)} times in the header;"
                             " give each column its own name")
        seen.add(name)


def not_numeric(source: str | os.PathLike, name: str, column: pd.Series, *,
                hint: str = "encode it first or drop it") -> InputError:
    """The error for a column that pandas read as text where numbers are needed: it names the file,
    the column and its first cell that is not a number, with that cell's data row (the frame's index + 1)."""
    stray = column.notna() & pd.to_numeric(column, errors="coerce").isna()
    where = ""
    if stray.any():
        at = column.index[int(np.flatnonzero(stray.to_numpy())[0])]
        where = f"{column[at]!r} in data row {at + 1}; " if isinstance(at, (int, np.integer)) else f"{column[at]!r}; "
    return InputError(f"{source}: column {name!r} is not numeric ({where}{hint})")


def check_labelled(path: Path, frame: pd.DataFrame, label: str) -> None:
    """Refuse rows without a ``--label`` value: a method would drop them without a word."""
    missing = frame[label].isna()
    if missing.any():
        raise InputError(f"{path}: {int(missing.sum())} rows have no --label {label!r} value (first in data row"
                         f" {int(np.flatnonzero(missing.to_numpy())[0]) + 1}); fill or drop them first")


def check_class_label(path: Path, frame: pd.DataFrame, label: str) -> None:
    """Refuse a ``--label`` of many distinct fractional numbers, a regression target: these methods
    classify, and each value would become a class of its own. Text, whole numbers (1.0 too) and a few
    fractional levels (a 2.5 / 3.0 / 3.5 rating) are classes."""
    values = frame[label]
    distinct = values.nunique() if pd.api.types.is_float_dtype(values) else 0
    if distinct <= MAX_FRACTIONAL_CLASSES:
        return
    fractional = values.notna() & (values != np.floor(values))
    if fractional.any():
        at = int(np.flatnonzero(fractional.to_numpy())[0])
        raise InputError(f"{path}: --label {label!r} holds {distinct} distinct fractional numbers"
                         f" ({float(values.iloc[at]):g} in data row {at + 1}); the method classifies, so the"
                         " label must name classes, not a quantity")


def shown_columns(columns: Sequence[Any], limit: int | None = None) -> str:
    """Header cells for an error message, comma-separated (the first ``limit``, then "..."). A cell
    of 32 or more hex digits is not shown: it is most likely a key file given as a CSV (a private
    key's one line becomes the header), and a key must never reach a message."""
    names = [str(c) for c in columns]
    cut = names if limit is None else names[:limit]
    text = ", ".join(f"<{len(n)} hex digits, not shown>" if HEX_RUN.fullmatch(n.strip()) else n for n in cut)
    return text + (", ..." if len(cut) < len(names) else "")


def delimiter_hint(frame: pd.DataFrame) -> str:
    """A hint when the whole header landed in one column: the file is not comma-separated."""
    if len(frame.columns) != 1:
        return ""
    found = [d for d in OTHER_DELIMITERS if d in str(frame.columns[0])]
    return f"; the file looks {found[0]!r}-separated, and securefl reads comma-separated CSV" if found else ""


def write_csv_atomically(out_dir: str | os.PathLike, frames: Mapping[str, pd.DataFrame]) -> list[Path]:
    """Write ``{file name: frame}`` into ``out_dir`` so a failure leaves nothing half-written.

    Every file is first written into a hidden staging folder inside ``out_dir`` (so the
    final moves stay on one file system, even when ``out_dir`` is a mount point); only
    when all are complete are they moved into place. A folder made for them is removed
    again if the write fails.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out exists and is not a folder")
    for name in frames:  # before anything is written: a replace that fails half way would leave a mix
        if (out / name).is_dir():
            raise InputError(f"{out / name}: a folder is in the way of this output file")
        real_target(out / name, "--out")  # a device or pipe there would be replaced by a file
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staging, written = Path(tempfile.mkdtemp(prefix=".staging-", dir=out)), []
    try:
        for name, frame in frames.items():
            frame.to_csv(staging / name, index=False)
        for name in frames:
            os.replace(staging / name, out / name)
            written.append(out / name)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if made and not written:
            shutil.rmtree(out, ignore_errors=True)
