"""The STFL paper's split of sample IDs: self-taught, train and test, random per seed.

40% of the IDs form the self-taught set: passive parties may use their rows for
unsupervised pretraining, and the active party's rows for those IDs are dropped
(it never sees them). 40% train and 20% test stay with the active party, which
alone knows which is which. With ``all_data=True`` (the paper's "(all data)"
rows) the self-taught IDs join the training set instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from protocols.errors import InputError
from securefl.data.vertical import PartyTable, VerticalDataset
from securefl.runtime.seeds import SeedPlan

STFL_FRACTIONS = (0.4, 0.4, 0.2)


@dataclass(frozen=True)
class VerticalSplit:
    """A dataset whose active party holds only its train and test rows, and those ID sets."""

    dataset: VerticalDataset
    train_ids: frozenset[str]
    test_ids: frozenset[str]
    self_taught_ids: frozenset[str]
    seed: int
    all_data: bool

    def positions(self, ids: frozenset[str]) -> np.ndarray:
        """Positions of ``ids`` among the active party's rows, in row order."""
        return np.array([i for i, v in enumerate(self.dataset.active.ids) if v in ids], dtype=np.int64)


def split_ids(ids: Sequence[str], *, seed: int, fractions: tuple[float, float, float] = STFL_FRACTIONS,
              owner: str = "the active party") -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The self-taught, train and test ID sets of the active party's ``ids``, reproducibly per ``seed``.

    It needs nothing but the active party's own IDs, so a party running alone on its own
    machine (``securefl run stfl --role``) draws the same split as a simulation of all parties.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1.0):
        raise InputError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    values = np.array(ids, dtype=object)
    if len(set(ids)) != len(values):  # copies of one ID would land in two of the sets
        raise InputError(f"{owner}: its IDs repeat; every ID must appear once to be split")
    order = SeedPlan(seed).numpy("split").permutation(len(values))
    n_self = int(round(fractions[0] * len(values)))
    n_train = int(round(fractions[1] * len(values)))
    self_taught = frozenset(values[order[:n_self]])
    train = frozenset(values[order[n_self:n_self + n_train]])
    test = frozenset(values[order[n_self + n_train:]])
    if not train or not test:
        raise InputError(f"{owner}: {len(values)} labelled rows are too few to split {fractions} into"
                         " non-empty train and test sets")
    return self_taught, train, test


def without_ids(table: PartyTable, ids: frozenset[str]) -> PartyTable:
    """``table`` without the rows whose ID is in ``ids`` (row order kept)."""
    return table.rows(np.array([i for i, v in enumerate(table.ids) if v not in ids], dtype=np.int64))


def stfl_split(dataset: VerticalDataset, *, seed: int, fractions: tuple[float, float, float] = STFL_FRACTIONS,
               all_data: bool = False) -> VerticalSplit:
    """Split the active party's IDs into self-taught / train / test, reproducibly per ``seed``."""
    self_taught, train, test = split_ids(dataset.active.ids, seed=seed, fractions=fractions,
                                         owner=f"dataset {dataset.name!r}")
    if all_data:
        train, kept = train | self_taught, dataset.active
    else:
        kept = without_ids(dataset.active, self_taught)
    active_only = VerticalDataset(name=dataset.name, active=kept, passive=dataset.passive,
                                  n_classes=dataset.n_classes, description=dataset.description,
                                  notes=dataset.notes)
    return VerticalSplit(dataset=active_only, train_ids=train, test_ids=test, self_taught_ids=self_taught,
                         seed=seed, all_data=all_data)
