"""CHFL with natural clients: each client brings its own rows; the common columns are named.

``securefl run chfl|common|simple --csv FILE --client-column COL --features 'common=a,b'``
holds every client's rows in one file; ``--role CLIENT --csv OWN`` runs one client per
machine with only its own file. Both build each client here, one client at a time, so a
client gets the same data either way:

- its unique features are its other columns: in a shared file, those with a value in
  every one of its rows (a column empty in all of them belongs to other clients);
- its rows are split 60/20/20 per seed, as :func:`~securefl.data.chfl_partition.sample_rows`
  deals one client's share;
- its labels are encoded against the federation's classes, sorted as text, since the
  common column's outputs are shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from securefl.data.chfl_partition import CHFLPartition, ClientData, ClientSplit, sample_rows
from securefl.data.tables import check_labelled, natural_clients, not_numeric, read_labelled_csv


def parse_common(text: str, *, where: str) -> tuple[str, ...]:
    """``--features 'common=a,b'``: the common columns of natural clients (their other columns are unique)."""
    key, _, names = str(text).partition("=")
    common = tuple(c.strip() for c in names.split(",") if c.strip())
    if key.strip() != "common" or ";" in names or not common:
        raise InputError(f"--features {text!r}: {where} each client's unique features are its own other"
                         " columns, so give only the common ones: --features 'common=COL,COL'")
    if len(set(common)) != len(common):
        raise InputError(f"--features {text!r}: a common column is listed twice")
    return common


def parse_classes(text: str) -> tuple[str, ...]:
    """``--classes a,b,c``: the federation's class values, distinct, sorted as text."""
    classes = [c.strip() for c in str(text).split(",")]
    if len(classes) < 2 or not all(classes) or len(set(classes)) != len(classes):
        raise InputError(f"--classes must list two or more distinct class values separated by commas, got {text!r}")
    return tuple(sorted(classes))


def client_data(frame: pd.DataFrame, *, name: str, label: str, common: Sequence[str], classes: Sequence[str],
                seed: int, source: str) -> tuple[ClientData, tuple[str, ...]]:
    """One client's :class:`ClientData` from its rows (label column included) and its unique column names.

    ``unique_columns`` index the frame's feature columns (all but the label, empty ones
    included), the columns a :class:`CHFLPartition`'s ``common_columns`` index too.
    """
    if label in common:
        raise InputError(f"--features: common column {label!r} is the --label column; name features only")
    labels = class_indices(frame[label], name=name, label=label, classes=classes, source=source)
    every = frame.drop(columns=[label])
    features = every.loc[:, every.notna().any(axis=0)]  # empty in all its rows: another client's
    for column in features.columns:
        missing = int(features[column].isna().sum())
        if missing:
            raise InputError(f"{source}: column {column!r} is empty in {missing} of client {name!r}'s"
                             f" {len(features)} rows (a feature of a client needs a value in each of its rows)")
        if not pd.api.types.is_numeric_dtype(features[column]):
            raise not_numeric(source, column, features[column])
    absent = [c for c in common if c not in features.columns]
    if absent:
        raise InputError(f"--features: common column {absent[0]!r} is not a feature of client {name!r} ({source})")
    unique = tuple(str(c) for c in features.columns if c not in common)
    if not unique:
        raise InputError(f"{source}: client {name!r} has no features besides the common ones")
    x_common, x_unique = features[list(common)].to_numpy(np.float64), features[list(unique)].to_numpy(np.float64)
    if not (np.isfinite(x_common).all() and np.isfinite(x_unique).all()):
        raise InputError(f"{source}: client {name!r} has an infinite feature value")
    parts = [p[0] for p in sample_rows(len(labels), 1, seed)]
    if any(len(p) == 0 for p in parts):
        raise InputError(f"{source}: client {name!r} has {len(labels)} rows, too few to split 60/20/20 into"
                         " training, validation and test rows")
    train, val, test = (ClientSplit(common=x_common[p], unique=x_unique[p], labels=labels[p]) for p in parts)
    columns = np.array([every.columns.get_loc(c) for c in unique], dtype=np.int64)
    return ClientData(name=name, unique_columns=columns, train=train, val=val, test=test), unique


def class_indices(column: pd.Series, *, name: str, label: str, classes: Sequence[str], source: str) -> np.ndarray:
    """The label values as class indices; a missing or unknown label is an InputError."""
    if column.isna().any():
        raise InputError(f"--label {label!r}: {int(column.isna().sum())} rows of client {name!r} have no label"
                         f" ({source})")
    text = column.astype(str)
    unknown = sorted(set(text) - set(classes))
    if unknown:
        raise InputError(f"--label {label!r}: client {name!r} has class {unknown[0]!r}, which is not among the"
                         f" federation's classes {','.join(classes)} ({source})")
    index = {c: i for i, c in enumerate(classes)}
    return text.map(index).to_numpy(np.int64)


def load_client_csv(path: str | Path, *, name: str, label: str, common: Sequence[str], classes: Sequence[str],
                    seed: int) -> ClientData:
    """The one client's own CSV, for ``securefl run chfl --role NAME`` (every row its own)."""
    path, frame = read_labelled_csv(path, label=label)
    return client_data(frame, name=name, label=label, common=common, classes=classes, seed=seed,
                       source=str(path))[0]


def load_csv_partition(path: str | Path, *, label: str, client_column: str, common: Sequence[str],
                       seed: int) -> CHFLPartition:
    """Every natural client of one CSV (one per value of ``client_column``), as a :class:`CHFLPartition`."""
    if client_column in common:
        raise InputError(f"--features: common column {client_column!r} is the --client-column; name features only")
    path, frame = read_labelled_csv(path, label=label, also=("--client-column", client_column))
    groups = natural_clients(path, frame, "--client-column", client_column)
    check_labelled(path, frame, label)
    classes = tuple(sorted(set(frame[label].astype(str))))
    if len(classes) < 2:
        raise InputError(f"--label {label!r}: {path} holds one class; classification needs two or more")
    if len(groups) < 2:
        raise InputError(f"--client-column {client_column!r} in {path} gives {len(groups)} client; need 2 or more")
    built = [client_data(rows, name=n, label=label, common=common, classes=classes,
                         seed=seed, source=str(path)) for n, rows in groups]
    names = [c for c in frame.columns if c not in (label, client_column)]
    settings = {"n_clients": len(groups), "client_column": client_column, "sample_seed": seed,
                "fractions": [0.6, 0.2, 0.2], "n_common": len(common), "common_features": list(common),
                "n_unique": [len(u) for _, u in built], "unique_features": {n: list(u) for (n, _), (_, u)
                                                                              in zip(groups, built)},
                "test_rows": "each client's own", "classes": list(classes)}
    return CHFLPartition(dataset=path.name.split(".")[0], n_classes=len(classes),
                         common_columns=np.array([names.index(c) for c in common], dtype=np.int64),
                         clients=tuple(data for data, _ in built), settings=settings)


__all__ = ["class_indices", "client_data", "load_client_csv", "load_csv_partition", "parse_classes", "parse_common"]
