"""CHFL's partitioner: common/unique features and disjoint per-client train/validation/test rows.

Paper, section V-A3: rows are split 60/20/20 at random; train and validation are
divided evenly over the clients, at random (IID clients: a file ordered by class or
region does not make them differ). Here the test rows are divided evenly too, so
every row belongs to exactly one client (sample IDs are disjoint) and each client
is scored on its own test rows; the reported accuracy is the mean over clients.
A ratio of the features (30% by default) is drawn as common; the rest are divided
evenly (``numpy.array_split``) into each client's unique features. A
:class:`FeatureSpec` names the columns instead (a user's own data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from protocols.errors import InputError
from securefl.runtime.seeds import SeedPlan

if TYPE_CHECKING:
    from securefl.data.chfl_sets import TabularDataset

FRACTIONS = (0.6, 0.2, 0.2)
"""Train, validation and test shares of the rows (paper, section V-A3)."""


@dataclass(frozen=True)
class FeatureSpec:
    """Named columns: the common ones and, per client, its unique ones (client count = ``len(unique)``)."""

    common: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class ClientSplit:
    """One client's rows of one split: common features, unique features, labels."""

    common: np.ndarray
    unique: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class ClientData:
    """Everything one client holds: its unique column indices and its train/validation/test rows."""

    name: str
    unique_columns: np.ndarray
    train: ClientSplit
    val: ClientSplit
    test: ClientSplit


@dataclass(frozen=True)
class CHFLPartition:
    """A dataset divided among CHFL clients."""

    dataset: str
    n_classes: int
    common_columns: np.ndarray
    clients: tuple[ClientData, ...]
    settings: dict

    @property
    def n_clients(self) -> int:
        return len(self.clients)


def parse_feature_spec(text: str) -> FeatureSpec:
    """Parse ``"common=a,b;unique=c,d|e,f"`` (one ``|``-separated group of unique columns per client)."""
    pieces = [p for p in str(text).split(";") if p.strip()]  # a trailing ';' is harmless
    keys = [p.split("=", 1)[0].strip() for p in pieces]
    if any("=" not in p for p in pieces) or sorted(keys) != ["common", "unique"]:  # no part dropped or overridden
        raise InputError(f"--features {text!r}: expected exactly 'common=COL,...;unique=COL,...|COL,...'"
                         " (one |-separated group per client; columns separated by ',', not ';')")
    parts = {key: p.split("=", 1)[1] for key, p in zip(keys, pieces)}
    common = tuple(c.strip() for c in parts["common"].split(",") if c.strip())
    unique = tuple(tuple(c.strip() for c in g.split(",") if c.strip()) for g in parts["unique"].split("|"))
    return FeatureSpec(common=common, unique=unique)


def _spec_columns(spec: FeatureSpec, names: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Column indices of ``spec``; unknown, empty or overlapping groups are an InputError."""
    index = {n: i for i, n in enumerate(names)}
    if len(spec.unique) < 2:
        raise InputError(f"feature spec: {len(spec.unique)} group of unique columns, so {len(spec.unique)} client;"
                         " give one |-separated group per client, at least 2")
    groups = [("common", spec.common), *((f"unique[{k}]", g) for k, g in enumerate(spec.unique))]
    seen: dict[str, str] = {}
    for label, group in groups:
        if not group:
            raise InputError(f"feature spec: {label} names no columns")
        for column in group:
            if column not in index:
                raise InputError(f"feature spec: {label} column {column!r} is not a feature of the dataset")
            if seen.get(column) == label:
                raise InputError(f"feature spec: column {column!r} is listed twice in {label}")
            if column in seen:
                raise InputError(f"feature spec: column {column!r} is in both {seen[column]} and {label};"
                                 " common and unique features must not overlap")
            seen[column] = label
    as_idx = [np.array([index[c] for c in g], dtype=np.int64) for _, g in groups]
    return as_idx[0], as_idx[1:]


def random_feature_split(n_features: int, n_clients: int, common_ratio: float, seed: int
                         ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Column indices: ``round(common_ratio * n_features)`` common ones, the rest dealt to the clients."""
    if not 0.0 < common_ratio < 1.0:
        raise InputError(f"common_ratio must be in (0, 1), got {common_ratio!r}")
    n_common = min(max(1, int(round(common_ratio * n_features))), n_features - n_clients)
    if n_common < 1:
        raise InputError(f"n_clients={n_clients} needs at least {n_clients + 1} features (one common and one"
                         f" unique per client); the dataset has {n_features}")
    order = SeedPlan(seed).numpy("chfl/features").permutation(n_features)
    common = np.sort(order[:n_common])
    return common, [np.sort(part) for part in np.array_split(order[n_common:], n_clients)]


def _client_split(x: np.ndarray, y: np.ndarray, rows: np.ndarray, common: np.ndarray, unique: np.ndarray
                  ) -> ClientSplit:
    return ClientSplit(common=x[np.ix_(rows, common)], unique=x[np.ix_(rows, unique)], labels=y[rows])


def sample_rows(n: int, n_clients: int, sample_seed: int, fractions: tuple[float, float, float] = FRACTIONS
                ) -> list[list[np.ndarray]]:
    """Row indices ``[train, validation, test][client]`` of ``n`` rows: what :func:`chfl_partition` deals out."""
    order = SeedPlan(sample_seed).numpy("chfl/samples").permutation(n)
    cuts = np.cumsum([int(round(f * n)) for f in fractions[:2]])
    # Deal the shuffled rows out as they come (then sort each client's own rows): cutting the
    # *sorted* indices into ranges would hand each client a contiguous stretch of the file, and
    # files ordered by class or region (Kaggle's covertype) would make the clients non-IID.
    return [[np.sort(part) for part in np.array_split(s, n_clients)] for s in np.split(order, cuts)]


def chfl_partition(dataset: TabularDataset, *, n_clients: int = 5, common_ratio: float = 0.3,
                   feature_seed: int = 0, sample_seed: int = 0, spec: FeatureSpec | None = None,
                   fractions: tuple[float, float, float] = FRACTIONS) -> CHFLPartition:
    """Divide ``dataset`` among ``n_clients`` CHFL clients (``spec`` fixes the columns and the client count)."""
    if spec is not None:
        common, uniques = _spec_columns(spec, dataset.feature_names)
        n_clients = len(uniques)
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 2:
        raise InputError(f"n_clients must be an int >= 2 (federation needs two clients), got {n_clients!r}")
    if spec is None:
        common, uniques = random_feature_split(dataset.features.shape[1], n_clients, common_ratio, feature_seed)
    n = len(dataset.labels)
    per_client = sample_rows(n, n_clients, sample_seed, fractions)
    clients = []
    for k in range(n_clients):
        name = f"c{k}"
        for what, rows in zip(("training", "validation", "test"), (p[k] for p in per_client)):
            if len(rows) == 0:
                raise InputError(f"dataset {dataset.name!r}: client {name!r} gets no {what} rows (its label set"
                                 f" is empty); {n} rows are too few for n_clients={n_clients}")
        data = [_client_split(dataset.features, dataset.labels, p[k], common, uniques[k]) for p in per_client]
        clients.append(ClientData(name=name, unique_columns=uniques[k], train=data[0], val=data[1], test=data[2]))
    settings = {"n_clients": n_clients, "common_ratio": None if spec else common_ratio,
                "feature_seed": None if spec else feature_seed, "sample_seed": sample_seed,
                "fractions": list(fractions), "n_common": int(len(common)),
                "n_unique": [int(len(u)) for u in uniques], "test_rows": "divided evenly over clients"}
    return CHFLPartition(dataset=dataset.name, n_classes=dataset.n_classes, common_columns=common,
                         clients=tuple(clients), settings=settings)


__all__ = ["CHFLPartition", "ClientData", "ClientSplit", "FRACTIONS", "FeatureSpec", "chfl_partition",
           "parse_feature_spec", "random_feature_split", "sample_rows"]
