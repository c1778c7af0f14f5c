"""Construction checks of :mod:`securefl.data.vertical`: each bad table is one clear error."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.data.vertical import PartyTable, VerticalDataset

IDS = ("a", "b", "c")


def _table(name="p", ids=IDS, features=None, names=("x0", "x1"), labels=None) -> PartyTable:
    feats = np.arange(6, dtype=float).reshape(3, 2) if features is None else features
    return PartyTable(name=name, ids=ids, features=feats, feature_names=names, labels=labels)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"features": np.zeros(3)}, "party 'p': features must be a 2-D array"),
    ({"features": [[0.0, 1.0]] * 3}, "party 'p': features must be a 2-D array"),
    ({"ids": ("a", "b")}, "party 'p': 3 feature rows but 2 IDs"),
    ({"names": ("x0",)}, "party 'p': 2 feature columns but 1 names"),
    ({"features": np.zeros((3, 0)), "names": ()}, "party 'p' has no feature columns"),
    ({"features": np.array([[0.0, np.nan]] * 3)}, "party 'p': features hold NaN or infinite values"),
    ({"features": np.array([[0.0, np.inf]] * 3)}, "party 'p': features hold NaN or infinite values"),
    ({"labels": np.zeros((3, 1))}, "party 'p': labels must be 1-D with one per ID"),
    ({"labels": np.zeros(2)}, "party 'p': labels must be 1-D with one per ID"),
])
def test_a_malformed_party_table_is_refused_naming_the_party(kwargs, message):
    # Act / Assert
    with pytest.raises(InputError) as err:
        _table(**kwargs)
    assert str(err.value) == message


@pytest.mark.parametrize(("ids", "message"), [
    (("a", "b", "a"), "party 'p' IDs: 1 duplicate ID"),
    (("a", "b", 3), "party 'p' IDs: ID at position 2 is int 3, not str"),
])
def test_party_ids_must_be_distinct_strings(ids, message):
    # before, a repeated ID reached the methods that join by ID without PSI (Centralized,
    # Hierarchical, the split NN): its copies could land in both train and test
    with pytest.raises(InputError, match=message):
        _table(ids=ids)


def test_an_id_split_refuses_repeated_ids():
    from securefl.data.split import split_ids

    with pytest.raises(InputError, match="the active party: its IDs repeat"):
        split_ids(["a", "b", "a", "c", "d"], seed=0)


def test_rows_keeps_ids_features_and_labels_together_in_the_order_asked():
    # Arrange
    table = _table(labels=np.array([0, 1, 0]))

    # Act
    picked = table.rows(np.array([2, 0]))

    # Assert
    assert picked.ids == ("c", "a") and picked.n_rows == 2 and picked.n_features == 2
    np.testing.assert_array_equal(picked.features, [[4.0, 5.0], [0.0, 1.0]])
    np.testing.assert_array_equal(picked.labels, [0, 0])


@pytest.mark.parametrize(("active", "passive", "message"), [
    (_table("act"), (_table("pas"),), "dataset 'd': the active party 'act' has no labels"),
    (_table("act", labels=np.zeros(3)), (), "dataset 'd' needs at least one passive party"),
    (_table("p", labels=np.zeros(3)), (_table("p"),), "dataset 'd': party names must be unique, got ['p', 'p']"),
    (_table("act", labels=np.zeros(3)), (_table("pas", labels=np.zeros(3)),),
     "dataset 'd': passive party 'pas' must not hold labels"),
])
def test_a_dataset_whose_parties_do_not_fit_the_roles_is_refused(active, passive, message):
    # Act / Assert
    with pytest.raises(InputError) as err:
        VerticalDataset(name="d", active=active, passive=passive)
    assert str(err.value) == message
