"""Loaders for the STFL paper's vertical datasets (breast, payment, credit) and sklearn's breast cancer.

Each loader takes the registry's verified file paths (in the order of the
entry's ``files``) and returns a :class:`VerticalDataset` whose active party is
FATE's "guest" side (it has the label ``y``) and whose passive party is FATE's
"host" side. Features are float64 and labels int64 in {0, 1}; IDs are the exact
strings of the id column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from protocols.psi import check_ids
from securefl.data.loaders import binary_labels, party_from_frame
from securefl.data.tables import read_party_csv
from securefl.data.vertical import PartyTable, VerticalDataset

GIVE_CREDIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("x0", "NumberOfOpenCreditLinesAndLoans"),
    ("x1", "NumberOfTimes90DaysLate"),
    ("x2", "NumberRealEstateLoansOrLines"),
    ("x3", "NumberOfTime60-89DaysPastDueNotWorse"),
    ("x4", "NumberOfDependents"),
    ("x5", "RevolvingUtilizationOfUnsecuredLines"),
    ("x6", "age"),
    ("x7", "NumberOfTime30-59DaysPastDueNotWorse"),
    ("x8", "DebtRatio"),
    ("x9", "MonthlyIncome"),
)
"""FATE give_credit column and the raw Kaggle column it scales.

x0-x4 form FATE's guest side (our active party), x5-x9 its host side (passive).
"""

FATE_DECIMALS = 6
"""FATE's data files hold values rounded to 6 decimals."""

GIVE_CREDIT_ACTIVE = 5
"""The first this many GIVE_CREDIT_COLUMNS belong to the active party."""

GIVE_CREDIT_LABEL = "SeriousDlqin2yrs"

BREAST_SKLEARN_ACTIVE = 10
"""The active party holds sklearn's first 10 breast-cancer features (the "mean" ones)."""


def load_fate_pair(files: Sequence[Path]) -> VerticalDataset:
    """A FATE hetero split: ``files`` = (guest CSV with id, y, x..., host CSV with id, x...)."""
    guest, host = files
    active, notes = party_from_frame(read_party_csv(guest, "id"), source=str(guest), name="active",
                                     id_column="id", label_column="y")
    passive, _ = party_from_frame(read_party_csv(host, "id"), source=str(host), name="passive",
                                  id_column="id")
    return VerticalDataset(name="fate", active=active, passive=(passive,), notes=notes)


def load_give_credit(files: Sequence[Path]) -> VerticalDataset:
    """FATE's give_credit split rebuilt from Kaggle's raw cs-training.csv.

    The unnamed first column is the ID (the FATE ``id``), SeriousDlqin2yrs the
    label; rows stay in the raw file's order. Each feature is FATE's scaling of
    one raw column (see :func:`fate_scaling`), rounded to 6 decimals like FATE's
    files: this reproduces FATE's give_credit test files exactly on their 30000 IDs.
    """
    (path,) = files
    frame = read_party_csv(path, id_column=GIVE_CREDIT_LABEL, unnamed_first=True)  # the IDs' column has no name
    id_column = frame.columns[0]
    ids = tuple(check_ids(frame[id_column].tolist(), source=str(path)))
    labels, _ = binary_labels(frame[GIVE_CREDIT_LABEL], str(path), GIVE_CREDIT_LABEL)
    raw = np.column_stack([_raw_na_as_zero(frame, column, path) for _, column in GIVE_CREDIT_COLUMNS])
    mean, std = fate_scaling(raw)
    features = np.round((raw - mean) / std, FATE_DECIMALS)
    names = tuple(name for name, _ in GIVE_CREDIT_COLUMNS)
    split = GIVE_CREDIT_ACTIVE
    active = PartyTable(name="active", ids=ids, features=np.ascontiguousarray(features[:, :split]),
                        feature_names=names[:split], labels=labels)
    passive = PartyTable(name="passive", ids=ids, features=np.ascontiguousarray(features[:, split:]),
                         feature_names=names[split:])
    return VerticalDataset(name="give_credit", active=active, passive=(passive,))


def fate_scaling(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and population standard deviation of FATE's standardisation (raw - mean) / std.

    Both are over all rows of the raw file (NA taken as 0), as FATE prepared its
    published files; each column is scaled on its own, so no party's values
    depend on another party's columns. In the data README's form x = a * raw + b,
    a = 1 / std and b = -mean / std; its coefficients are these to 6 significant
    digits, too coarse to reproduce FATE's values (off by up to 1.4e-4 on DebtRatio).
    """
    std = raw.std(axis=0)
    if np.any(std == 0):
        raise InputError("a raw give_credit column is constant and cannot be standardised")
    return raw.mean(axis=0), std


def _raw_na_as_zero(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    """One raw cs-training column as float64, with its "NA" cells replaced by 0 (as FATE did)."""
    if column not in frame.columns:
        raise InputError(f"{path}: no column {column!r}; is this Kaggle's cs-training.csv?")
    text = frame[column].str.strip()
    values = pd.to_numeric(text.mask(text.isin(("NA", "")), "0"), errors="coerce")
    if values.isna().any():
        raise InputError(f"{path}: column {column!r} is not numeric")
    return values.to_numpy(dtype=np.float64)


def load_breast_sklearn(files: Sequence[Path] = ()) -> VerticalDataset:
    """scikit-learn's bundled breast cancer set: active = label + first 10 features, passive = other 20.

    IDs are the row numbers "0".."568"; labels are sklearn's (0 = malignant,
    1 = benign), the same convention as FATE's breast files.
    """
    if files:
        raise InputError("the breast_sklearn dataset takes no files")
    from sklearn.datasets import load_breast_cancer  # imported here: sklearn is slow to import

    bunch = load_breast_cancer()
    features = np.asarray(bunch.data, dtype=np.float64)
    names = tuple(str(n) for n in bunch.feature_names)
    ids = tuple(str(i) for i in range(features.shape[0]))
    split = BREAST_SKLEARN_ACTIVE
    active = PartyTable(name="active", ids=ids, features=np.ascontiguousarray(features[:, :split]),
                        feature_names=names[:split], labels=np.asarray(bunch.target, dtype=np.int64))
    passive = PartyTable(name="passive", ids=ids, features=np.ascontiguousarray(features[:, split:]),
                         feature_names=names[split:])
    return VerticalDataset(name="breast_sklearn", active=active, passive=(passive,))
