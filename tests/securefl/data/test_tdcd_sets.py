"""TDCD data: dealing columns to silos and rows to clients, the loaders, the registered files."""

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.data.registry import load_registered
from securefl.data.tdcd_sets import TieredTable, load_mnist_idx, load_regression_csv, make_shard, tiered_split


def _table(rows=50, features=5):
    x = np.arange(rows * features, dtype=np.float64).reshape(rows, features) % 7 + np.arange(features)
    return TieredTable("t", "regression", x, np.arange(rows, dtype=np.float64))


def test_every_silo_deals_every_row_once_and_the_silos_split_the_columns():
    # Arrange / Act
    split = tiered_split(_table(), silos=2, clients=3, seed=0)
    # Assert
    assert split.columns == ((0, 2), (2, 5)) or split.columns == ((0, 3), (3, 5))
    assert split.n_train + split.n_test == 50 and split.n_test == 10
    for layout, shards in zip(split.layouts, split.shards):
        train = np.sort(np.concatenate(layout.train_rows))
        assert np.array_equal(train, np.arange(split.n_train))
        assert np.array_equal(np.sort(np.concatenate(layout.test_rows)), np.arange(split.n_test))
        assert [len(s.y_train) for s in shards] == [len(r) for r in layout.train_rows]
    # the silos deal their rows with their own streams, and a label follows its row into every silo
    assert not all(np.array_equal(a, b) for a, b in zip(split.layouts[0].train_rows, split.layouts[1].train_rows))
    labels = [np.zeros(split.n_train) for _ in range(2)]
    for j in range(2):
        for rows, shard in zip(split.layouts[j].train_rows, split.shards[j]):
            labels[j][rows] = shard.y_train
    assert np.array_equal(labels[0], labels[1])


def test_clients_standardise_on_their_own_training_rows_and_the_last_silo_carries_the_bias():
    # Arrange / Act
    split = tiered_split(_table(), silos=2, clients=2, seed=3)
    first, last = split.shards[0][0], split.shards[1][1]
    # Assert
    np.testing.assert_allclose(first.x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(first.x_train.std(axis=0), 1, atol=1e-4)
    assert first.x_train.shape[1] == split.columns[0][1] - split.columns[0][0]
    assert np.all(last.x_train[:, -1] == 1) and np.all(last.x_test[:, -1] == 1)
    assert last.x_train.shape[1] == split.columns[1][1] - split.columns[1][0] + 1


def test_the_split_is_the_same_for_a_seed_and_differs_between_seeds():
    a, b, c = (tiered_split(_table(), silos=2, clients=2, seed=s) for s in (1, 1, 2))
    assert all(np.array_equal(x, y) for x, y in zip(a.layouts[0].train_rows, b.layouts[0].train_rows))
    assert not all(np.array_equal(x, y) for x, y in zip(a.layouts[0].train_rows, c.layouts[0].train_rows))


def test_images_are_split_by_columns_of_pixels():
    images = np.zeros((40, 8, 8), dtype=np.uint8)
    split = tiered_split(TieredTable("img", "classification", images, np.zeros(40, np.int64), 2),
                         silos=2, clients=2, seed=0)
    assert split.shards[0][0].x_train.shape[1:] == (8, 4)
    assert split.shards[1][0].x_train.shape[1:] == (8, 4)


def test_image_slices_too_narrow_for_the_cnn_are_a_one_line_error():
    # before, 8 silos of MNIST's 28 columns reached the model's constructor in a party thread: a
    # 39-line traceback of a ValueError
    table = TieredTable("img", "classification", np.zeros((40, 8, 28), np.uint8), np.zeros(40, np.int64), 2)

    assert {x.shape[2] for x in (s[0].x_train for s in tiered_split(table, silos=7, clients=2, seed=0).shards)} == {4}
    with pytest.raises(InputError, match="8 silos cut its 28-pixel-wide images into slices under 4 pixels.*at most 7"):
        tiered_split(table, silos=8, clients=2, seed=0)


@pytest.mark.parametrize("kwargs, message", [
    ({"silos": 0, "clients": 2}, "silos must be a positive int"),
    ({"silos": 6, "clients": 2}, "5 feature columns, too few for 6 silos"),
    ({"silos": 2, "clients": 30}, "too few for 30 clients"),
    ({"silos": 2, "clients": 2, "test_fraction": 1.0}, "test_fraction must be in"),
])
def test_a_layout_the_table_cannot_fill_is_a_one_line_error(kwargs, message):
    with pytest.raises(InputError, match=message):
        tiered_split(_table(), seed=0, **kwargs)


def _idx(path, magic_dims, shape, values):
    header = bytes([0, 0, 8, magic_dims]) + b"".join(int(n).to_bytes(4, "big") for n in shape)
    path.write_bytes(gzip.compress(header + bytes(values)))
    return path


def test_mnist_idx_files_are_read_with_their_header_checked(tmp_path):
    # Arrange
    images = _idx(tmp_path / "i.gz", 3, (2, 2, 3), range(12))
    labels = _idx(tmp_path / "l.gz", 1, (2,), [7, 1])
    short = _idx(tmp_path / "s.gz", 3, (3, 2, 3), range(12))
    # Act
    table = load_mnist_idx([images, labels])
    # Assert
    assert table.x.shape == (2, 2, 3) and table.x[1, 1, 2] == 11 and list(table.y) == [7, 1]
    with pytest.raises(InputError, match="the header says"):
        load_mnist_idx([short, labels])
    with pytest.raises(InputError, match="not an IDX file"):
        load_mnist_idx([labels, labels])


def test_a_regression_csv_with_a_missing_value_is_refused(tmp_path):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("1,2,3\n4,5,6\n")
    bad.write_text("1,2,3\n4,,6\n")
    table = load_regression_csv([good])
    assert table.x.shape == (2, 2) and list(table.y) == [3, 6]
    with pytest.raises(InputError, match="bad.csv: holds missing"):
        load_regression_csv([bad])


@pytest.mark.skipif(not os.environ.get("SECUREFL_DATA"), reason="SECUREFL_DATA is not set: no dataset files")
@pytest.mark.parametrize("name, rows, width", [("tdcd_pol", 15000, 26), ("tdcd_elevators", 16599, 18),
                                               ("tdcd_kegg", 63608, 27), ("mnist", 10000, 28)])
def test_the_registered_files_load_with_their_documented_shapes(name, rows, width):
    table = load_registered(name, kind="tdcd", data_dir=Path(os.environ["SECUREFL_DATA"]))
    assert len(table.y) == rows and table.width == width
    if name == "mnist":
        assert table.n_classes == 10 and np.bincount(table.y)[0] == 980


def test_a_column_constant_in_a_clients_training_rows_is_not_blown_up_on_its_test_rows():
    # Arrange: as in UCI elevators, a column at -1.8073e-08 on every training row (its float std is ~1e-24,
    # not 0) and the rare value on a test row
    x_train = np.column_stack([np.random.default_rng(0).normal(size=150), np.full(150, -1.8073e-08)])
    x_test = np.array([[0.0, 9.9982e-05]])
    # Act
    shard = make_shard("c", 0, x_train, np.zeros(150), x_test, np.zeros(1), bias=False)
    # Assert: scale 1 for the constant column, so the test value moves by its raw difference only
    assert np.abs(shard.x_train[:, 1]).max() < 1e-12
    assert 0 < shard.x_test[0, 1] < 1e-3


@pytest.mark.parametrize("features", [81, 5])
def test_superconductivity_loads_only_a_file_of_its_81_features(tmp_path, features):
    # Arrange: registered without a checksum (not stored here), so its shape is what tells a wrong file
    path = tmp_path / "tdcd" / "superconductivity_train.csv"
    path.parent.mkdir()
    header = ",".join([*(f"f{i}" for i in range(features)), "critical_temp"])
    path.write_text(header + "\n" + "\n".join(",".join(["1.5"] * (features + 1)) for _ in range(3)) + "\n")
    # Act / Assert: the loader takes 81 features; the registry then counts the rows (3, not 21,263)
    if features == 81:
        from securefl.data.tdcd_entries import load_superconductivity

        assert load_superconductivity([path]).x.shape == (3, 81)
        with pytest.raises(InputError, match="has 3 rows where the registry expects 21263"):
            load_registered("superconductivity", kind="tdcd", data_dir=tmp_path)
    else:
        with pytest.raises(InputError, match="5 features where Superconductivity has 81"):
            load_registered("superconductivity", kind="tdcd", data_dir=tmp_path)
