"""GL datasets: natural clients with their own files (Obeidi, Appendix D); a user's CSVs: :mod:`securefl.data.gl_csv`.

``gl_covertype``: UCI Covertype's first 15120 records, split by wilderness area into
Comanche, Neota, Poudre and Rawah (the partition key ``wilderness_area`` is dropped
as a feature). The splits are fixed files. Comanche's and Rawah's test files are
missing here, so those two clients are evaluated on their validation files
(``ClientTable.evaluated_on``). ``gl_heart``: Cleveland, South Africa and
Faisalabad; per seed ``s`` each full table is split like the authors' files:
``train_test_split(test_size=0.33, random_state=s)`` then the rest with
``test_size=0.1`` (validation), unstratified -- this reproduces the stored seed-0
train/validation/test files row for row (checked in the tests).

:func:`encode_client` fits the encoders on the client's own training rows only:
ordinal encoding (unknown -> -1) of discrete columns (text, bool, or integer with at
most 50 distinct training values), standardisation of the others, label encoding of the target.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from securefl.data.entries import DataFile, DatasetEntry
from securefl.models.scaling import rescaled_moments

COVER_CLIENTS = ("comanche", "neota", "poudre", "rawah")
COVER_TESTED = ("neota", "poudre")
HEART_CLIENTS = ("cleveland", "sa", "faisalabad")
TEST_SIZE, VALIDATION_SIZE = 0.33, 0.1
PARTITION_KEY = "wilderness_area"
LABEL = "target"
MAX_ORDINAL_LEVELS = 50


@dataclass(frozen=True)
class ClientTable:
    """One client's rows: fixed splits (``train``/``test``) or a ``full`` table split per seed."""

    name: str
    label: str
    train: pd.DataFrame | None = None
    test: pd.DataFrame | None = None
    full: pd.DataFrame | None = None
    evaluated_on: str = "test"
    validation: pd.DataFrame | None = None
    """Rows held out of training for picking the epoch (``GLConfig.select``); a ``full`` table's split makes them."""


@dataclass(frozen=True)
class GLDataset:
    """The clients of one GL experiment; ``pooled`` = (train, test) of the centralized baseline, if any."""

    name: str
    clients: tuple[ClientTable, ...]
    binary: bool
    pooled: tuple[pd.DataFrame, pd.DataFrame] | None = None

    def split(self, seed: int) -> tuple[ClientTable, ...]:
        """Every client with fixed ``train``/``test`` frames for run seed ``seed``."""
        return tuple(split_client(c, seed) for c in self.clients)


@dataclass(frozen=True)
class ClientData:
    """One client's encoded arrays: float32 features, int64 labels 0..len(classes)-1."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    features: tuple[str, ...]
    classes: tuple
    evaluated_on: str = "test"
    dropped_test_rows: int = 0
    x_val: np.ndarray | None = None
    y_val: np.ndarray | None = None


def split_client(client: ClientTable, seed: int) -> ClientTable:
    """``client`` with train/test frames: its fixed files, or its full table split the authors' way."""
    if client.full is None:
        return client
    if len(client.full) < 3:
        raise InputError(f"client {client.name!r} has {len(client.full)} rows; it needs at least 3 to split")
    if not 0 <= seed < 2**32:  # sklearn's random_state range; seed s must keep giving the authors' split s
        raise InputError(f"seed must be in 0..{2**32 - 1} for clients split per seed, got {seed}")
    from sklearn.model_selection import train_test_split  # here: sklearn is slow to import

    rest, test = train_test_split(client.full, test_size=TEST_SIZE, random_state=seed)
    train, validation = train_test_split(rest, test_size=VALIDATION_SIZE, random_state=seed)
    return ClientTable(client.name, client.label, train.reset_index(drop=True), test.reset_index(drop=True),
                       evaluated_on="test", validation=validation.reset_index(drop=True))


def feature_kinds(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(ordinal columns, numeric columns) of a client's training features.

    Ordinal: text or bool columns, and integer columns with at most
    ``MAX_ORDINAL_LEVELS`` distinct training values (codes, counts, grades). Numeric:
    float columns and many-valued integer columns (e.g. Faisalabad's ``time`` or
    covertype's distances), which ordinal encoding would map mostly to -1 on test
    rows with values unseen in training.

    The GL paper's Tables 5-7 list each heart feature as int or float32. Encoding every
    listed int as ordinal instead (Cleveland's cp, ca and chol; Faisalabad's
    creatinine_phosphokinase and time) was checked on heart seeds 0-19: Faisalabad's mean
    AUROC fell from 84.2 to 80.5 (Local) and from 85.4 to 81.9 (GL), against the authors'
    85.7 and 86.9, FedAvg's AUROC moved away from theirs on all three clients, and
    Cleveland's Local and GL AUROC rose by at most 0.7. So the authors' numbers fit this
    rule better than their tables' types.
    """
    def numeric(c: str) -> bool:
        col = frame[c]
        if pd.api.types.is_float_dtype(col):
            return True
        return pd.api.types.is_integer_dtype(col) and not pd.api.types.is_bool_dtype(col) \
            and col.nunique() > MAX_ORDINAL_LEVELS
    nums = [c for c in frame.columns if numeric(c)]
    return [c for c in frame.columns if c not in nums], nums


def encode_client(client: ClientTable, *, classes: Sequence | None = None) -> ClientData:
    """Fit encoders on the client's training rows and encode train and test.

    ``classes`` (default: the training labels' sorted values) fixes the label encoding,
    e.g. FedAvg's globally fitted encoder. Test rows whose label is not a class are
    dropped and counted (``dropped_test_rows``).
    """
    train, test = client.train, client.test
    if train is None or test is None or len(train) == 0:
        raise InputError(f"client {client.name!r} has no training rows")
    for frame in (train, test):
        if client.label not in frame.columns:
            raise InputError(f"client {client.name!r}: label column {client.label!r} not found")
    y_train = train[client.label].dropna()
    if y_train.empty:
        raise InputError(f"client {client.name!r}: label column {client.label!r} has no values (empty label set)")
    classes = tuple(sorted(y_train.unique().tolist())) if classes is None else tuple(classes)
    train, test = train.loc[y_train.index], test[test[client.label].isin(classes)]
    if test.empty:
        raise InputError(f"client {client.name!r}: none of its {len(client.test)} {client.evaluated_on} rows has"
                         f" a class its {len(train)} training rows have, so it has nothing to be evaluated on")
    validation = None if client.validation is None else client.validation[client.validation[client.label].isin(classes)]
    x_cols = [c for c in train.columns if c != client.label]
    if not x_cols:
        raise InputError(f"client {client.name!r} has no feature columns besides {client.label!r}")
    held_out = [test] + ([] if validation is None else [validation])
    x_train, *x_held = _encode_features(train[x_cols], *(frame[x_cols] for frame in held_out))
    index = {c: i for i, c in enumerate(classes)}
    labels = [frame[client.label].map(index).to_numpy(np.int64) for frame in (train, *held_out)]
    return ClientData(client.name, x_train, labels[0], x_held[0], labels[1], tuple(x_cols), classes,
                      client.evaluated_on, len(client.test) - len(test),
                      x_val=x_held[1] if validation is not None else None,
                      y_val=labels[2] if validation is not None else None)


def _encode_features(train: pd.DataFrame, *held_out: pd.DataFrame) -> list[np.ndarray]:
    """``train`` and each ``held_out`` frame encoded with encoders fitted on ``train`` alone."""
    from sklearn.preprocessing import OrdinalEncoder, StandardScaler  # here: sklearn is slow to import

    ordinal, numeric = feature_kinds(train)
    frames = [train, *held_out]
    outs = [np.zeros(frame.shape, np.float32) for frame in frames]
    if ordinal:
        enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1)
        by_value = [c for c in ordinal if pd.api.types.is_numeric_dtype(train[c])]  # integer and bool codes
        enc.fit(_ordinal_values(train, ordinal, by_value))
        pos = [train.columns.get_loc(c) for c in ordinal]
        for out, frame in zip(outs, frames):
            out[:, pos] = enc.transform(_ordinal_values(frame, ordinal, by_value))
    if numeric:
        scaler = _fit_scaler(StandardScaler(), train[numeric].to_numpy(np.float64))
        pos = [train.columns.get_loc(c) for c in numeric]
        for out, frame in zip(outs, frames):
            out[:, pos] = np.nan_to_num(scaler.transform(frame[numeric].to_numpy(np.float64)))
    return outs


def _ordinal_values(frame: pd.DataFrame, columns: Sequence[str], by_value: Sequence[str]) -> pd.DataFrame:
    """``frame``'s ordinal ``columns`` as the encoder reads them: those in ``by_value`` (integer and
    bool codes in the training rows) as numbers, so codes follow their numeric order as scikit-learn's
    OrdinalEncoder gives them (as text, 100 came before 94 and month 10 before month 2); the others
    as text. A held-out cell that is not a number there is missing (-1)."""
    out = pd.DataFrame(index=frame.index)
    for c in columns:
        out[c] = pd.to_numeric(frame[c], errors="coerce").astype(np.float64) if c in by_value \
            else frame[c].astype(str)
    return out


def _fit_scaler(scaler, values: np.ndarray):
    """``scaler`` fitted on ``values`` (NaN = missing), columns whose squares pass float64's
    range (|x| ~ 1e154 and up) fitted rescaled, so such a column is standardised, not zeroed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflow the columns below redo
        scaler.fit(values)
    present = ~np.isnan(values).all(axis=0)
    huge = present & ~(np.isfinite(scaler.mean_) & np.isfinite(scaler.var_) & np.isfinite(scaler.scale_))
    if huge.any():
        scaler.mean_[huge], std = rescaled_moments(values[:, huge])
        scaler.scale_[huge] = np.where(std > 0, std, 1.0)
    return scaler


def encode_clients(tables: Sequence[ClientTable]) -> tuple[ClientData, ...]:
    """Each client encoded with its own encoders and its own label space (GL, Local)."""
    return tuple(encode_client(t) for t in tables)


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def load_cover(paths: Sequence[Path]) -> GLDataset:
    """The covertype entry's files: pooled train, pooled validation, then per client train/validation(/test)."""
    frames = {p.name.removesuffix(".csv.gz"): _read(p) for p in paths}
    clients = []
    for name in COVER_CLIENTS:
        split = "test" if name in COVER_TESTED else "validation"
        clients.append(ClientTable(name, LABEL, frames[f"covertype11_train_{name}"].drop(columns=PARTITION_KEY),
                                   frames[f"covertype11_{split}_{name}"].drop(columns=PARTITION_KEY),
                                   evaluated_on=split))
    pooled = (frames["covertype11_train"], frames["covertype11_validation"])
    return GLDataset("gl_covertype", tuple(clients), binary=False, pooled=pooled)


def load_heart(paths: Sequence[Path]) -> GLDataset:
    """The heart entry's three ``*_full`` tables, split per seed by :meth:`GLDataset.split`."""
    clients = tuple(ClientTable(name, LABEL, full=_read(p)) for name, p in zip(HEART_CLIENTS, paths))
    return GLDataset("gl_heart", clients, binary=True)


def _cover_files() -> tuple[DataFile, ...]:
    sums = {"train": "30ec572c17be0ec3e9068217b4fd4c214ba131732fe3dd0984a5898deff5a6cc",
            "validation": "3389c3d726107446e04f6a4640638678cbf4257dcafbb6979792599203cb884d",
            "train_comanche": "6a5b619d62c9fb3c955849c25cce3ddd31e1bbc6c1c5bc6195ea2ec0e995c365",
            "validation_comanche": "f7260b31385b60254016cb83b68ba606cdcfcb4e482048bb08d60f666bb2ca91",
            "train_neota": "7aec94669565801e8cb924ff8be1e90ef78d52362d2808a53af71990af030c15",
            "test_neota": "2a76f0e5712d19356a17c7eadb8b979c4ed67f4a9661e8bd594f6dffb80b446a",
            "train_poudre": "98a05b034189e4edcbc9569a42cf38a118c2f9329c797d0834123c516f865346",
            "test_poudre": "a71252ff7361b4a14f18a9c3d784aa43d68655f78a14ca0af8a9a4cc49f50231",
            "train_rawah": "7cdf44cdadecd2552280d1d15d2cedbd4ab2df8104a7d74cc7c7e580fb9a33d1",
            "validation_rawah": "061882cbd6518ed13a04b305551db2bf047c2197a05b7d8b2e1e4391e3695eb8"}
    return tuple(DataFile(f"gl/cover/covertype11_{k}.csv.gz", v) for k, v in sums.items())


_HEART_SUMS = ("e6fe06e2c364a7016f518065b9a8451a2d5ef711fba95c275fa9a47ee456b38a",
               "5b8db1e05f688855d5c76ea7927bbd3fd6a5bd89a127c0a4fcbf27f015c3b098",
               "66f4a727cb411fa28ebad46b2397ca31c719e9dea40792df7face9f776307d8d")
_GL_SOURCE = "transferFL/gl:{} @ 013161a285f4372c97ac0c65fbdbdb31d1de7dc6"

GL_ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="gl_covertype", paper="GL", paper_name="Covertype",
        description="UCI Covertype records 1-15120 in GL's 11-feature encoding, split by wilderness area into"
                    " 4 clients (wilderness_area dropped); 7 numeric + 3 ordinal features; Comanche and Rawah"
                    " are evaluated on their validation files (their test files are missing here)",
        files=_cover_files(), source=_GL_SOURCE.format("cover/data/covertype11_*.csv"),
        licence="UCI Covertype: CC BY 4.0; source repository: no licence file",
        parties="clients comanche, neota, poudre, rawah (natural: wilderness area); centralized baseline ="
                " pooled train / validation files (rows: 15120 train + validation, 29385 + 32293 test)",
        n_rows=15120 + 29385 + 32293,
        loader=load_cover, kind="gl", pooled=True),
    DatasetEntry(
        name="gl_heart", paper="GL", paper_name="Heart Disease",
        description="Cleveland (UCI Heart Disease, 303 rows, 13 features), South Africa (SAHeart, 462 rows, 9),"
                    " Faisalabad (UCI Heart Failure, 299 rows, 12); binary target; split per seed 67/33 then"
                    " 10% validation, as the authors' seed files",
        files=tuple(DataFile(f"gl/heart/heart_disease_{c}_full.csv.gz", s) for c, s in zip(HEART_CLIENTS, _HEART_SUMS)),
        source=_GL_SOURCE.format("heart/data/0/heart_disease_*_full.csv"),
        licence="UCI: CC BY 4.0; SAHeart (ElemStatLearn): not stated; source repository: no licence file",
        parties="clients cleveland, sa, faisalabad (natural: hospital), disjoint feature spaces",
        n_rows=303 + 462 + 299, loader=load_heart, kind="gl"),
)

__all__ = ["COVER_CLIENTS", "ClientData", "ClientTable", "GLDataset", "GL_ENTRIES", "HEART_CLIENTS",
           "encode_client", "encode_clients", "feature_kinds", "load_cover", "load_heart", "split_client"]
