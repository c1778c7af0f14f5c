"""The STFL split: drawn from the active party's IDs and the seed alone."""

import pytest

from protocols.errors import InputError
from securefl.data import split_ids, stfl_split, without_ids
from tests.securefl.algorithms.helpers import synthetic


def test_split_ids_partitions_the_ids_40_40_20_reproducibly():
    ids = [f"u{i}" for i in range(100)]

    self_taught, train, test = split_ids(ids, seed=5)

    assert (len(self_taught), len(train), len(test)) == (40, 40, 20)
    assert self_taught | train | test == set(ids) and not (self_taught & train or train & test)
    assert split_ids(ids, seed=5) == (self_taught, train, test)
    assert split_ids(ids, seed=6) != (self_taught, train, test)


def test_the_dataset_split_is_the_active_partys_own_split():
    # a party running alone (securefl run stfl --role) must draw what the simulation draws
    dataset = synthetic(n=150)

    split = stfl_split(dataset, seed=2)
    alone = split_ids(dataset.active.ids, seed=2)

    assert alone == (split.self_taught_ids, split.train_ids, split.test_ids)
    assert without_ids(dataset.active, alone[0]).ids == split.dataset.active.ids


def test_too_few_rows_name_their_owner():
    with pytest.raises(InputError, match="bank.csv: 2 labelled rows are too few"):
        split_ids(["a", "b"], seed=0, owner="bank.csv")
