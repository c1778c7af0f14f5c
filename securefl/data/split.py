"""The STFL paper's split of sample IDs: self-taught, train and test, random per seed.

40% of the IDs form the self-taught set: passive parties may use their rows for
unsupervised pretraining, and the active party's rows for those IDs are dropped
(it never sees them). 40% train and 20% test stay with the active party, which
alone knows which is which. With ``all_data=True`` (the paper's "(all data)"
rows) the self-taught IDs join the training set instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.errors import InputError
from securefl.data.vertical import VerticalDataset
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


def stfl_split(dataset: VerticalDataset, *, seed: int, fractions: tuple[float, float, float] = STFL_FRACTIONS,
               all_data: bool = False) -> VerticalSplit:
    """Split the active party's IDs into self-taught / train / test, reproducibly per ``seed``."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1.0):
        raise InputError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    ids = np.array(dataset.active.ids, dtype=object)
    order = SeedPlan(seed).numpy("split").permutation(len(ids))
    n_self = int(round(fractions[0] * len(ids)))
    n_train = int(round(fractions[1] * len(ids)))
    self_taught = frozenset(ids[order[:n_self]])
    train = frozenset(ids[order[n_self:n_self + n_train]])
    test = frozenset(ids[order[n_self + n_train:]])
    if not train or not test:
        raise InputError(f"dataset {dataset.name!r}: {len(ids)} labelled rows are too few to split"
                         f" {fractions} into non-empty train and test sets")
    if all_data:
        train, kept = train | self_taught, dataset.active
    else:
        keep = np.array([i for i, v in enumerate(dataset.active.ids) if v not in self_taught], dtype=np.int64)
        kept = dataset.active.rows(keep)
    active_only = VerticalDataset(name=dataset.name, active=kept, passive=dataset.passive,
                                  n_classes=dataset.n_classes, description=dataset.description,
                                  notes=dataset.notes)
    return VerticalSplit(dataset=active_only, train_ids=train, test_ids=test, self_taught_ids=self_taught,
                         seed=seed, all_data=all_data)
