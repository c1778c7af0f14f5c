"""TDCD clients' label tags: equal for silos holding the same labels however rows are spread, keyed."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.data.tdcd_clients import ClientRows, add_tags, check_same_labels, label_tag, positions_by_ids
from securefl.data.tdcd_sets import split_positions

KEY = bytes(range(32))


def _rows(name, ids, y):
    return ClientRows(name, tuple(ids), np.zeros((len(ids), 1)), np.asarray(y, dtype=np.float64), ("f",))


def test_a_silos_tag_does_not_depend_on_how_its_rows_are_spread_over_clients():
    # Arrange
    ids, y = [f"id{i}" for i in range(9)], np.arange(9) * 0.5
    order = [4, 0, 8, 2, 6, 1, 3, 7, 5]
    # Act
    whole = label_tag(KEY, ids, y)
    parts = add_tags([label_tag(KEY, [ids[i] for i in part], y[part]) for part in (order[:2], order[2:7], order[7:])])
    # Assert
    assert parts == whole and len(whole) == 16


def test_one_label_changed_or_another_key_changes_the_tag():
    ids, y = ["a", "b", "c"], np.array([1.0, 0.0, 1.0])
    other = y.copy()
    other[1] = 1.0
    assert label_tag(KEY, ids, other) != label_tag(KEY, ids, y)
    assert label_tag(bytes(32), ids, y) != label_tag(KEY, ids, y)
    assert label_tag(KEY, ["a", "c", "b"], y) != label_tag(KEY, ids, y)  # labels bound to their IDs


def test_negative_zero_is_the_same_label_as_zero():
    assert label_tag(KEY, ["a"], np.array([-0.0])) == label_tag(KEY, ["a"], np.array([0.0]))


def test_silos_holding_different_labels_are_one_line_naming_both_and_a_sample():
    # Arrange: silo "right" holds the same IDs, one of them with another label
    left = [_rows("l0", ["a", "b"], [0, 1]), _rows("l1", ["c"], [2])]
    right = [_rows("r0", ["c", "a"], [2, 0]), _rows("r1", ["b"], [5])]
    # Act / Assert
    check_same_labels([("left", left), ("right", [_rows("r0", ["c", "a", "b"], [2, 0, 1])])])
    with pytest.raises(InputError,
                       match=r"silos 'left' and 'right' hold different labels for 1 samples \(e.g. ID 'b'\)"):
        check_same_labels([("left", left), ("right", right)])


def test_a_client_csv_keeps_its_ids_as_written(tmp_path):
    # Arrange: "001" and "1" are different samples, as PSI compares them
    from securefl.data.tdcd_clients import load_client_csv

    (tmp_path / "a.csv").write_text("id,x,y\n001,1.0,2.0\n002,2.0,3.0\n")
    (tmp_path / "b.csv").write_text("id,x,y\n1,1.0,2.0\n2,2.0,3.0\n")
    # Act
    a = load_client_csv(tmp_path / "a.csv", name="a", id_column="id", label="y")
    b = load_client_csv(tmp_path / "b.csv", name="b", id_column="id", label="y")
    # Assert
    assert a.ids == ("001", "002") and b.ids == ("1", "2")


def test_an_empty_id_in_a_client_csv_is_refused(tmp_path):
    from securefl.data.tdcd_clients import load_client_csv

    (tmp_path / "a.csv").write_text("id,x,y\n1,1.0,2.0\n,2.0,3.0\n")
    with pytest.raises(InputError, match="column 'id' has 1 empty or blank ID cell"):
        load_client_csv(tmp_path / "a.csv", name="a", id_column="id", label="y")


def test_a_client_left_without_training_rows_is_named():
    # Arrange: a one-row client; some seed draws its row for testing. Before, the error was the
    # scaler's "a scaler needs a non-empty 2-D array, got shape [0, 2]", naming neither
    ids = [f"id{i:03d}" for i in range(50)]
    lists = [ids[:1], ids[1:]]
    seed = next(s for s in range(100) if ids[0] in [ids[int(i)] for i in split_positions(50, s)[1]])
    # Act / Assert
    with pytest.raises(InputError, match=rf"silo 'hub0': client 'a' has no training rows after seed {seed}'s"
                                         r" 80/20 split \(it holds 1\)"):
        positions_by_ids(lists, seed, where="silo 'hub0'", names=["a", "b"])
    kept = next(s for s in range(100) if ids[0] not in [ids[int(i)] for i in split_positions(50, s)[1]])
    assert len(positions_by_ids(lists, kept, names=["a", "b"])[0][0].train_local) == 1
