"""CHFL datasets: registry entries, loaders (Kaggle CSV, UCI text, ARFF, LIBSVM, user CSV), and the partitioner.

A CHFL dataset is one table (:class:`TabularDataset`); :func:`chfl_partition`
splits its *features* into common ones (every client) and unique ones (one
client each) and its *rows* into disjoint per-client train/validation/test sets
(paper, section V-A3). Of the paper's five datasets only covertype is stored
here; sensorless, helena, jannis and aloi are registered with their standard
file names (``available=False``) so they run wherever the files exist, and
scikit-learn's bundled digits set runs everywhere.
"""

from __future__ import annotations

import bz2
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from protocols.errors import InputError
from securefl.data.chfl_partition import (CHFLPartition, ClientData, ClientSplit, FeatureSpec, chfl_partition,
                                          parse_feature_spec)
from securefl.data.entries import DataFile, DatasetEntry


@dataclass(frozen=True)
class TabularDataset:
    """One classification table: float features ``[N, d]``, labels ``0..C-1``, names, original class values."""

    name: str
    features: np.ndarray
    labels: np.ndarray
    feature_names: tuple[str, ...]
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.features.ndim != 2 or len(self.features) != len(self.labels):
            raise InputError(f"dataset {self.name!r}: features {list(self.features.shape)} and"
                             f" {len(self.labels)} labels do not match")
        if len(self.feature_names) != self.features.shape[1]:
            raise InputError(f"dataset {self.name!r}: {len(self.feature_names)} feature names for"
                             f" {self.features.shape[1]} columns")

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _encode(name: str, features: np.ndarray, raw_labels: np.ndarray, feature_names: Sequence[str]
            ) -> TabularDataset:
    """Labels mapped to 0..C-1 in sorted order of their original values."""
    classes, labels = np.unique(np.asarray(raw_labels), return_inverse=True)
    return TabularDataset(name=name, features=np.asarray(features, dtype=np.float64),
                          labels=labels.astype(np.int64), feature_names=tuple(str(f) for f in feature_names),
                          classes=tuple(str(c) for c in classes))


def _arff_text(path: Path, features: np.ndarray, names: Sequence[str]) -> InputError:
    """The error for an ARFF feature column holding a value that is not a number: names column, value, data row."""
    for j, name in enumerate(names):
        for i, value in enumerate(features[:, j]):
            try:
                float(value)
            except ValueError:
                return InputError(f"{path}: attribute {name!r} is not numeric ({value!r} in data row {i + 1})")
    return InputError(f"{path}: a feature column is not numeric")


def _check_finite(name: str, features: np.ndarray, columns: Sequence[str], origin: str) -> None:
    bad = np.flatnonzero(~np.isfinite(features).all(axis=0))
    if len(bad):
        raise InputError(f"{origin}: column {columns[bad[0]]!r} holds missing or non-finite values")


def load_covertype(paths: Sequence[Path]) -> TabularDataset:
    """Kaggle forest-cover ``train.csv``: Id, 54 features, Cover_Type 1..7 (2160 rows each)."""
    import pandas as pd

    frame = pd.read_csv(paths[0])
    for column in ("Id", "Cover_Type"):
        if column not in frame.columns:
            raise InputError(f"{paths[0]}: column {column!r} not found (expected Kaggle's train.csv)")
    features = frame.drop(columns=["Id", "Cover_Type"])
    return _encode("covertype", features.to_numpy(np.float64), frame["Cover_Type"].to_numpy(), features.columns)


def load_sensorless(paths: Sequence[Path]) -> TabularDataset:
    """UCI ``Sensorless_drive_diagnosis.txt``: 48 space-separated features, class 1..11 last."""
    try:
        table = np.loadtxt(paths[0], dtype=np.float64, ndmin=2)
    except ValueError:  # UnicodeDecodeError too: numpy's message names neither the file nor, always, the line
        raise _text_table_error(paths[0]) from None
    if table.shape[1] != 49:
        raise InputError(f"{paths[0]}: expected 49 space-separated columns (48 features, label last),"
                         f" got shape {list(table.shape)}")
    names = [f"x{i}" for i in range(48)]
    _check_finite("sensorless", table, [*names, "class"], str(paths[0]))
    fractional = np.flatnonzero(table[:, -1] != np.floor(table[:, -1]))
    if len(fractional):
        raise InputError(f"{paths[0]}: class {table[fractional[0], -1]:g} in data row {fractional[0] + 1}"
                         " is not a whole number")
    return _encode("sensorless", table[:, :-1], table[:, -1].astype(np.int64), names)


def _text_table_error(path: Path) -> InputError:
    """The error for a whitespace-separated table of numbers that numpy cannot read: the first line
    holding a value that is not a number, or with another count of values than the first line."""
    width = None
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            values = line.split("#", 1)[0].split()
            if not values:
                continue
            for value in values:
                try:
                    float(value)
                except ValueError:
                    return InputError(f"{path}: line {number}: {value[:40]!r} is not a number")
            if width is not None and len(values) != width:
                return InputError(f"{path}: line {number} has {len(values)} values where the first line has {width}")
            width = len(values)
    return InputError(f"{path}: not a table of numbers")


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".bz2":
        return io.TextIOWrapper(bz2.open(path, "rb"), encoding="utf-8")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open("r", encoding="utf-8")


def read_arff(path: Path, *, target: str = "class", name: str | None = None) -> TabularDataset:
    """A dense numeric ARFF file (OpenML / AutoML benchmark) with class column ``target``."""
    attributes: list[str] = []
    rows: list[list[str]] = []
    with _open_text(path) as handle:
        in_data = False
        for line in handle:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if in_data:
                if line.startswith("{"):
                    raise InputError(f"{path}: sparse ARFF rows ({{index value, ...}}) are not supported;"
                                     " convert the file to dense ARFF")
                rows.append([v.strip().strip("'\"") for v in line.split(",")])
            elif line.lower().startswith("@attribute"):
                attributes.append(line.split(None, 2)[1].strip("'\""))
            elif line.lower().startswith("@data"):
                in_data = True
    if target not in attributes:
        raise InputError(f"{path}: target column {target!r} not among its ARFF attributes")
    table = np.array(rows, dtype=object)
    if table.ndim != 2 or table.shape[1] != len(attributes):
        raise InputError(f"{path}: data rows do not have {len(attributes)} values each")
    t = attributes.index(target)
    names = [a for i, a in enumerate(attributes) if i != t]
    try:
        features = np.delete(table, t, axis=1).astype(np.float64)
    except ValueError:
        raise _arff_text(path, np.delete(table, t, axis=1), names) from None
    _check_finite(name or path.stem, features, names, str(path))
    return _encode(name or path.stem.split(".")[0], features, table[:, t].astype(str), names)


def expect_features(dataset: TabularDataset, path: Path, count: int) -> TabularDataset:
    """``dataset`` if it has ``count`` features; else InputError. The files registered without a
    checksum (not stored here) are checked by their shape instead, so a wrong file does not run."""
    if dataset.features.shape[1] != count:
        raise InputError(f"{path}: {dataset.features.shape[1]} features where {dataset.name} has {count};"
                         " is it the right file?")
    return dataset


def load_helena(paths: Sequence[Path]) -> TabularDataset:
    """OpenML/AutoML-benchmark ``helena.arff`` (27 features, 100 classes, target ``class``)."""
    return expect_features(read_arff(paths[0], name="helena"), paths[0], 27)


def load_jannis(paths: Sequence[Path]) -> TabularDataset:
    """OpenML/AutoML-benchmark ``jannis.arff`` (54 features, 4 classes, target ``class``)."""
    return expect_features(read_arff(paths[0], name="jannis"), paths[0], 54)


def read_libsvm(path: Path, *, name: str, width: int | None = None) -> TabularDataset:
    """A LIBSVM-format file (``label idx:value ...``, 1-based indices), optionally .bz2/.gz compressed.
    ``width``: the number of features (a sparse file need not use the last); an index past it is an error."""
    labels: list[int] = []
    entries: list[dict[int, float]] = []
    with _open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            parts = line.split()
            if parts:
                label, row = _libsvm_line(path, number, parts, name=name, width=width)
                labels.append(label)
                entries.append(row)
    width = width if width is not None else 1 + max((max(e) for e in entries if e), default=-1)
    features = np.zeros((len(entries), width))
    for i, row in enumerate(entries):
        features[i, list(row)] = list(row.values())
    names = [f"x{i + 1}" for i in range(width)]
    _check_finite(name, features, names, str(path))
    return _encode(name, features, np.array(labels, dtype=np.int64), names)


def _libsvm_line(path: Path, number: int, parts: Sequence[str], *, name: str, width: int | None
                 ) -> tuple[int, dict[int, float]]:
    """One LIBSVM line's class (a whole number) and {0-based column: value}; an index below 1 or
    past ``width`` is refused, as it would land in another column or none."""
    try:
        label = float(parts[0])
        row = {int(k): float(v) for k, v in (p.split(":", 1) for p in parts[1:])}
    except ValueError:
        raise InputError(f"{path}: line {number} is not in LIBSVM format (label idx:value ...)") from None
    if not label.is_integer():
        raise InputError(f"{path}: line {number}: class label {parts[0]!r} is not a whole number")
    bad = [k for k in row if k < 1]
    if bad:
        raise InputError(f"{path}: line {number}: feature index {bad[0]}; LIBSVM indices start at 1")
    if width is not None and row and max(row) > width:
        raise InputError(f"{path}: line {number}: feature index {max(row)} where {name} has {width} features;"
                         " is it the right file?")
    return int(label), {k - 1: v for k, v in row.items()}


def load_aloi(paths: Sequence[Path]) -> TabularDataset:
    """LIBSVM ``aloi.scale.bz2`` (128 features, 1000 classes)."""
    return read_libsvm(paths[0], name="aloi", width=128)


def load_digits_sklearn(paths: Sequence[Path]) -> TabularDataset:
    """scikit-learn's bundled 8x8 digits (1797 x 64, 10 classes); needs no files."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return _encode("digits", bunch.data, bunch.target, [f"pixel_{i}" for i in range(64)])


def load_csv_dataset(path: str | Path, *, label: str, name: str | None = None,
                     columns: Sequence[str] | None = None) -> TabularDataset:
    """A user's own CSV (optionally .gz): every column but ``label`` is a numeric feature.

    ``columns``: only these are features (a feature spec's columns); the file's other
    columns are neither read as features nor checked, so an ID or text column may stay.
    """
    import pandas as pd

    from securefl.data.tables import check_labelled, not_numeric, read_labelled_csv

    if columns is not None and label in columns:
        raise InputError(f"--features names column {label!r}, which is the --label column; name features only")
    path, frame = read_labelled_csv(path, label=label, features=columns)
    check_labelled(path, frame, label)
    if frame[label].astype(str).nunique() < 2:  # one class: a model that learns nothing scores accuracy 1.0
        raise InputError(f"--label {label!r}: {path} holds one class; classification needs two or more")
    features = frame.drop(columns=[label])
    if columns is not None:
        named = set(columns)
        features = features.loc[:, [c for c in features.columns if c in named]]
    text = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]  # pandas 3: str dtype
    if text:
        raise not_numeric(path, text[0], features[text[0]])
    values = features.to_numpy(np.float64)
    _check_finite(path.name, values, list(map(str, features.columns)), str(path))
    return _encode(name or path.name.split(".")[0], values, frame[label].astype(str).to_numpy(), features.columns)


_MISSING = "not available in ../shared/data; registered with its standard file name so it runs where the file is"

CHFL_ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="covertype", paper="CHFL", paper_name="covertype", kind="chfl",
        description="Kaggle 'Forest Cover Type Prediction' train.csv (first 15120 UCI Covertype records):"
                    " 54 features, 7 classes of 2160 rows",
        files=(DataFile("chfl/forest_cover_type_train.csv.gz",
                        "4c6b0be9a12c1843b5484fe8020a138bfbdbe1401470a9ce70aafe710145efdc"),),
        source="carwow/forest-cover-type-prediction @ df00e30bc2c2ccbb22fc7e1f9317a8269705a122"
               " (data/train.csv header + data/train.m rows)",
        licence="Kaggle competition rules; source repository: no licence file",
        parties="common/unique features and clients formed by chfl_partition", n_rows=15120,
        loader=load_covertype),
    DatasetEntry(
        name="sensorless", paper="CHFL", paper_name="sensorless", kind="chfl", available=False,
        description=f"UCI Dataset for Sensorless Drive Diagnosis (48 features, 11 classes); {_MISSING}",
        files=(DataFile("chfl/Sensorless_drive_diagnosis.txt", None),),
        source="UCI ML repository, Sensorless_drive_diagnosis.txt", licence="CC BY 4.0",
        parties="formed by chfl_partition", n_rows=58509, loader=load_sensorless),
    DatasetEntry(
        name="helena", paper="CHFL", paper_name="helena", kind="chfl", available=False,
        description=f"helena (OpenML 41169, AutoML benchmark; 27 features, 100 classes); {_MISSING}",
        files=(DataFile("chfl/helena.arff", None),), source="OpenML dataset 41169 (ARFF, target 'class')",
        licence="as listed by OpenML", parties="formed by chfl_partition", n_rows=65196, loader=load_helena),
    DatasetEntry(
        name="jannis", paper="CHFL", paper_name="jannis", kind="chfl", available=False,
        description=f"jannis (OpenML 41168, AutoML benchmark; 54 features, 4 classes); {_MISSING}",
        files=(DataFile("chfl/jannis.arff", None),), source="OpenML dataset 41168 (ARFF, target 'class')",
        licence="as listed by OpenML", parties="formed by chfl_partition", n_rows=83733, loader=load_jannis),
    DatasetEntry(
        name="aloi", paper="CHFL", paper_name="aloi", kind="chfl", available=False,
        description=f"ALOI, LIBSVM's aloi.scale (128 features, 1000 classes); {_MISSING}",
        files=(DataFile("chfl/aloi.scale.bz2", None),),
        source="LIBSVM multiclass data sets, aloi.scale.bz2", licence="ALOI: free for research use",
        parties="formed by chfl_partition", n_rows=108000, loader=load_aloi),
    DatasetEntry(
        name="digits", paper="CHFL", paper_name="digits (not in the paper)", kind="chfl",
        description="scikit-learn's bundled optical digits, 8x8 (1797 x 64, 10 classes); needs no files",
        files=(), source="scikit-learn sklearn.datasets.load_digits (UCI Optical Recognition of"
                         " Handwritten Digits, test part)",
        licence="scikit-learn: BSD-3-Clause; UCI data: CC BY 4.0", parties="formed by chfl_partition",
        n_rows=1797, loader=load_digits_sklearn),
)


def load_chfl_dataset(name: str, *, data_dir: str | Path | None = None) -> TabularDataset:
    """Load the registered CHFL dataset ``name`` (files checked against their sha256 where known)."""
    from securefl.data.registry import get_dataset, load_registered

    entry = get_dataset(name)
    dataset = load_registered(name, kind="chfl", data_dir=data_dir)
    if len(dataset.labels) != entry.n_rows:
        raise InputError(f"dataset {name!r}: loaded {len(dataset.labels)} rows, the registry says {entry.n_rows}")
    return dataset


__all__ = ["CHFLPartition", "CHFL_ENTRIES", "ClientData", "ClientSplit", "FeatureSpec", "TabularDataset",
           "chfl_partition", "load_chfl_dataset", "load_csv_dataset", "parse_feature_spec", "read_arff",
           "read_libsvm"]
