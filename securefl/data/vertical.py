"""Vertically partitioned data: one table per party, rows keyed by exact-string IDs.

The active party (label holder) has features and labels; each passive party
(feature holder) has features only. Rows of different parties are NOT aligned:
that is what PSI is for. Preprocessing (scalers) is fitted by each party on its
own training rows, inside the algorithm, never here across parties.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from protocols.errors import InputError
from protocols.psi import check_ids


@dataclass(frozen=True)
class PartyTable:
    """One party's rows: IDs (exact strings), float features and, for the active party, labels."""

    name: str
    ids: tuple[str, ...]
    features: np.ndarray
    feature_names: tuple[str, ...]
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        # one row per ID: the methods that join by ID without PSI (Centralized, Hierarchical, the split
        # NN) would keep one copy's features and could put the copies in both train and test
        check_ids(self.ids, source=f"party {self.name!r} IDs")
        feats = self.features
        if not isinstance(feats, np.ndarray) or feats.ndim != 2:
            raise InputError(f"party {self.name!r}: features must be a 2-D array")
        if feats.shape[0] != len(self.ids):
            raise InputError(f"party {self.name!r}: {feats.shape[0]} feature rows but {len(self.ids)} IDs")
        if feats.shape[1] != len(self.feature_names):
            raise InputError(f"party {self.name!r}: {feats.shape[1]} feature columns but"
                             f" {len(self.feature_names)} names")
        if feats.shape[1] == 0:
            raise InputError(f"party {self.name!r} has no feature columns")
        if not np.all(np.isfinite(feats)):
            raise InputError(f"party {self.name!r}: features hold NaN or infinite values")
        if self.labels is not None and (self.labels.ndim != 1 or len(self.labels) != len(self.ids)):
            raise InputError(f"party {self.name!r}: labels must be 1-D with one per ID")

    @property
    def n_rows(self) -> int:
        return len(self.ids)

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    def rows(self, positions: np.ndarray) -> "PartyTable":
        """The table restricted to ``positions`` (in that order)."""
        positions = np.asarray(positions, dtype=np.int64)
        return PartyTable(name=self.name, ids=tuple(self.ids[i] for i in positions),
                          features=self.features[positions], feature_names=self.feature_names,
                          labels=None if self.labels is None else self.labels[positions])


@dataclass(frozen=True)
class VerticalDataset:
    """A dataset split by features across one active and one or more passive parties."""

    name: str
    active: PartyTable
    passive: tuple[PartyTable, ...]
    n_classes: int = 2
    description: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.active.labels is None:
            raise InputError(f"dataset {self.name!r}: the active party {self.active.name!r} has no labels")
        if not self.passive:
            raise InputError(f"dataset {self.name!r} needs at least one passive party")
        names = [self.active.name, *(p.name for p in self.passive)]
        if len(set(names)) != len(names):
            raise InputError(f"dataset {self.name!r}: party names must be unique, got {names}")
        for party in self.passive:
            if party.labels is not None:
                raise InputError(f"dataset {self.name!r}: passive party {party.name!r} must not hold labels")

    @property
    def parties(self) -> tuple[PartyTable, ...]:
        return (self.active, *self.passive)
