"""GL datasets: registry entries, per-client encoders, the authors' heart splits, the user CSV loader."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from protocols.errors import InputError
from securefl.data.gl_csv import load_csv_clients
from securefl.data.gl_sets import GL_ENTRIES, HEART_CLIENTS, ClientTable, encode_client, split_client
from securefl.data.registry import get_dataset, load_registered


@pytest.fixture(scope="module")
def data_dir() -> Path:
    value = os.environ.get("SECUREFL_DATA")
    if not value:
        pytest.skip("SECUREFL_DATA is not set: the real GL dataset files are not available")
    return Path(value)


def _toy(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"site": np.repeat(["x", "y"], n // 2), "num": rng.normal(size=n),
                         "code": rng.integers(0, 3, n), "label": rng.integers(0, 2, n)})


def test_entries_are_registered_as_gl_datasets_with_checksums():
    # Arrange / Act
    entries = {e.name: e for e in GL_ENTRIES}
    # Assert
    assert set(entries) == {"gl_covertype", "gl_heart"}
    assert all(get_dataset(name).kind == "gl" for name in entries)
    assert all(len(f.sha256) == 64 for e in entries.values() for f in e.files)


def test_encoders_are_fitted_on_the_clients_training_rows_only():
    # Arrange: test has a code never seen in training and a larger scale
    train = pd.DataFrame({"num": [0.0, 2.0, 4.0], "code": [1, 2, 1], "label": ["a", "b", "a"]})
    test = pd.DataFrame({"num": [2.0, 10.0], "code": [3, 2], "label": ["b", "c"]})
    # Act
    data = encode_client(ClientTable("k", "label", train, test))
    # Assert: standardised with train stats, unseen code -> -1, unseen label row dropped
    np.testing.assert_allclose(data.x_train[:, 0], [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    assert data.x_test.tolist() == [[0.0, -1.0]]
    assert data.classes == ("a", "b") and data.y_test.tolist() == [1] and data.dropped_test_rows == 1


def test_integer_codes_are_numbered_in_numeric_order_as_sklearn_does():
    # Arrange: months 1..12 and blood pressures around 100, which as text sort 10 < 2 and 100 < 94
    train = pd.DataFrame({"month": list(range(1, 13)), "bp": [94, 100, 120, 99] * 3, "label": ["a", "b"] * 6})
    test = pd.DataFrame({"month": [2, 10], "bp": [99, 120], "label": ["a", "b"]})
    # Act
    data = encode_client(ClientTable("k", "label", train, test))
    # Assert: scikit-learn's OrdinalEncoder on the numbers
    assert data.x_train[:, 0].tolist() == list(range(12))
    assert data.x_test.tolist() == [[1.0, 1.0], [9.0, 3.0]]  # bp codes: 94 -> 0, 99 -> 1, 100 -> 2, 120 -> 3


@pytest.mark.parametrize("seed", [2**32, -1])
def test_a_seed_sklearn_cannot_split_with_is_one_line(seed):
    full = _toy(n=60).drop(columns="site")
    with pytest.raises(InputError, match=f"seed must be in 0..4294967295 for clients split per seed, got {seed}"):
        split_client(ClientTable("k", "label", full=full), seed=seed)


def test_a_split_client_keeps_its_validation_rows_encoded_like_its_test_rows():
    # Arrange
    full = _toy(n=60).drop(columns="site")
    # Act
    table = split_client(ClientTable("k", "label", full=full), seed=4)
    data = encode_client(table)
    # Assert: 33% test, then 10% of the rest for validation; the three are disjoint and cover every row
    parts = [table.train, table.validation, table.test]
    assert [len(p) for p in parts] == [36, 4, 20]
    rows = sorted(tuple(r) for p in parts for r in p.itertuples(index=False))
    assert rows == sorted(tuple(r) for r in full.itertuples(index=False))
    assert data.x_val.shape == (4, 2) and data.y_val.shape == (4,)
    again = encode_client(ClientTable("k", "label", table.train, table.validation))  # same train encoders
    np.testing.assert_array_equal(data.x_val, again.x_test)


def test_a_numeric_column_too_large_to_square_is_standardised_not_zeroed():
    # Arrange: the same client twice, once with a column scaled past float64's squares
    train = pd.DataFrame({"num": [0.0, 2.0, 4.0, np.nan], "code": [1, 2, 1, 2], "label": ["a", "b", "a", "b"]})
    test = pd.DataFrame({"num": [2.0, 10.0], "code": [2, 1], "label": ["b", "a"]})
    scaled = [frame.assign(num=frame["num"] * 1e300) for frame in (train, test)]
    # Act
    plain = encode_client(ClientTable("k", "label", train, test))
    huge = encode_client(ClientTable("k", "label", *scaled))
    # Assert: standardising is scale-free, so both encode alike (NaN stays 0, a missing value)
    np.testing.assert_allclose(huge.x_train, plain.x_train, rtol=1e-6)
    np.testing.assert_allclose(huge.x_test, plain.x_test, rtol=1e-6)
    assert np.abs(huge.x_test[:, 0]).max() > 1


def test_csv_loader_makes_one_client_per_value(tmp_path):
    # Arrange
    path = tmp_path / "mine.csv"
    _toy().to_csv(path, index=False)
    # Act
    ds = load_csv_clients(path, label="label", client_column="site")
    tables = ds.split(0)
    # Assert
    assert [c.name for c in tables] == ["x", "y"] and ds.binary
    assert "site" not in tables[0].train.columns and len(tables[0].train) + len(tables[0].test) < 15


@pytest.mark.parametrize("kwargs, message", [
    ({"label": "nope", "client_column": "site"}, "--label: column 'nope'"),
    ({"label": "label", "client_column": "nope"}, "--client-column: column 'nope'"),
])
def test_csv_loader_names_the_missing_column(tmp_path, kwargs, message):
    path = tmp_path / "mine.csv"
    _toy().to_csv(path, index=False)
    with pytest.raises(InputError, match=message):
        load_csv_clients(path, **kwargs)


def test_a_client_whose_test_rows_share_no_class_with_its_training_rows_is_refused():
    # Arrange: every test label is one the training rows lack
    train = pd.DataFrame({"num": [0.0, 2.0, 4.0], "label": ["a", "b", "a"]})
    test = pd.DataFrame({"num": [2.0, 10.0], "label": ["c", "d"]})
    # Act / Assert
    with pytest.raises(InputError, match="client 'k': none of its 2 test rows has a class its 3 training rows have"):
        encode_client(ClientTable("k", "label", train, test))


def test_a_label_of_many_fractional_numbers_is_refused_as_a_quantity(tmp_path):
    # Arrange: a regression target; a handful of fractional levels (a rating) stays a class label
    frame = _toy(n=120)
    frame["label"] = np.random.default_rng(1).normal(size=120)
    target, rating = tmp_path / "target.csv", tmp_path / "rating.csv"
    frame.to_csv(target, index=False)
    frame.assign(label=np.tile([2.5, 3.0, 3.5], 40)).to_csv(rating, index=False)
    # Act
    rated = load_csv_clients(rating, label="label", client_column="site")
    # Assert
    assert len(rated.clients) == 2
    with pytest.raises(InputError, match=r"target\.csv: --label 'label' holds 120 distinct fractional numbers"
                                         r" \(-?[0-9.]+ in data row 1\); the method classifies"):
        load_csv_clients(target, label="label", client_column="site")


def test_a_client_without_labels_or_rows_is_an_input_error(tmp_path):
    # Arrange
    frame = _toy()
    frame["label"] = frame["label"].astype(float)
    frame.loc[frame.site == "y", "label"] = np.nan
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    # Act / Assert
    with pytest.raises(InputError, match="client 'y' .* no label values"):
        load_csv_clients(path, label="label", client_column="site")
    with pytest.raises(InputError, match="client 'k' has no training rows"):
        encode_client(ClientTable("k", "label", frame.iloc[:0], frame))


def test_a_numeric_column_with_a_stray_text_cell_is_refused_by_name(tmp_path):
    # Arrange: 60 distinct numbers and one typo, which would make the column 61 categories
    frame = _toy(n=62)
    frame["num"] = frame["num"].round(6).astype(str)
    frame.loc[4, "num"] = "4,5"
    frame.to_csv(tmp_path / "typo.csv", index=False)
    # Act / Assert
    with pytest.raises(InputError, match=r"typo\.csv: column 'num' holds numbers but 1 cell\(s\) that are not"
                                         r" \(first: '4,5' in data row 5\)"):
        load_csv_clients(tmp_path / "typo.csv", label="label", client_column="site")


def test_a_text_column_of_few_levels_stays_categorical(tmp_path):
    # Arrange: "?" among a handful of codes is a category of its own, as in UCI's heart files
    frame = _toy(n=30)
    frame["code"] = frame["code"].astype(str)
    frame.loc[0, "code"] = "?"
    frame.to_csv(tmp_path / "codes.csv", index=False)
    # Act
    data = load_csv_clients(tmp_path / "codes.csv", label="label", client_column="site")
    # Assert
    assert len(data.clients) == 2


def test_rows_that_name_no_client_are_an_input_error_not_dropped(tmp_path):
    # Arrange: three rows lose their client
    frame = _toy()
    frame.loc[frame.index[:3], "site"] = None
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    # Act / Assert
    with pytest.raises(InputError, match=r"--client-column 'site': 3 rows of .*mine\.csv name no client"):
        load_csv_clients(path, label="label", client_column="site")


def test_client_names_are_the_files_text_so_01_and_1_are_two_clients(tmp_path):
    # Arrange: before, pandas read the column as numbers and "01" and "1" became one client "1"
    frame = pd.concat([_toy(n=60).assign(site=s) for s in ("01", "1", "10", "2")], ignore_index=True)
    frame.to_csv(tmp_path / "sites.csv", index=False)
    # Act
    data = load_csv_clients(tmp_path / "sites.csv", label="label", client_column="site")
    # Assert: four clients, numeric names in numeric order
    assert [c.name for c in data.clients] == ["01", "1", "2", "10"]
    assert [len(c.full) for c in data.clients] == [60, 60, 60, 60]


def test_a_client_whose_labels_are_one_class_is_refused(tmp_path):
    # before, it trained, scored AUROC nan and exited 0
    frame = _toy(n=40)
    frame.loc[frame.site == "x", "label"] = 1
    frame.to_csv(tmp_path / "one.csv", index=False)

    with pytest.raises(InputError, match=r"client 'x' \(site\) has one class in column 'label' of .*one\.csv"):
        load_csv_clients(tmp_path / "one.csv", label="label", client_column="site")


def test_numbers_written_with_thousands_separators_are_refused_by_name(tmp_path):
    # before, "86,555" was text, encoded as a category: every unseen test value -1
    frame = _toy(n=40)
    frame["income"] = [f"{v:,}" for v in np.arange(40) * 1_013 + 86_555]
    frame.to_csv(tmp_path / "income.csv", index=False)

    with pytest.raises(InputError, match=r"column 'income' holds numbers written with separators \('86,555' in data"
                                         r" row 1\)"):
        load_csv_clients(tmp_path / "income.csv", label="label", client_column="site")


def test_unknown_dataset_is_an_input_error():
    with pytest.raises(InputError, match="unknown dataset 'gl_nope'"):
        load_registered("gl_nope", kind="gl")


def test_heart_seed_zero_split_reproduces_the_authors_files(data_dir):
    # Arrange
    ds = load_registered("gl_heart", kind="gl", data_dir=data_dir)
    # Act
    tables = ds.split(0)
    # Assert: same rows in the same order as heart/data/0/*_{train,test}_*.csv
    for name, table in zip(HEART_CLIENTS, tables):
        train = pd.read_csv(data_dir / f"gl/heart/heart_disease_train_{name}.csv.gz")
        test = pd.read_csv(data_dir / f"gl/heart/heart_disease_test_{name}.csv.gz")
        pd.testing.assert_frame_equal(table.train, train)
        pd.testing.assert_frame_equal(table.test, test)


def test_covertype_clients_drop_the_partition_key(data_dir):
    # Arrange / Act
    ds = load_registered("gl_covertype", kind="gl", data_dir=data_dir)
    data = [encode_client(t) for t in ds.split(8)]
    # Assert: 10 features, the paper's Table 4 class counts, Comanche/Rawah on validation
    assert all(d.x_train.shape[1] == 10 and "wilderness_area" not in d.features for d in data)
    assert [len(d.classes) for d in data] == [6, 3, 4, 4]
    assert [d.evaluated_on for d in data] == ["validation", "test", "test", "validation"]
    assert split_client(ds.clients[0], 1).train is ds.clients[0].train


def test_a_client_keeps_only_its_own_columns_from_a_shared_csv_or_its_own_file(tmp_path):
    # Arrange: clinic a records c, clinic b records d; a's own file carries b's column empty
    from securefl.data.gl_csv import load_client_csv

    frame = _toy(n=40).drop(columns=["num", "code"])
    frame["c"] = np.where(frame["site"] == "x", 1.5, np.nan)
    frame["d"] = np.where(frame["site"] == "y", 2.5, np.nan)
    frame.to_csv(tmp_path / "all.csv", index=False)
    frame[frame["site"] == "x"].drop(columns="site").to_csv(tmp_path / "a.csv", index=False)
    # Act
    shared = load_csv_clients(tmp_path / "all.csv", label="label", client_column="site")
    alone = load_client_csv(tmp_path / "a.csv", label="label", name="x")
    # Assert: the other client's (empty) column is no feature of this one, either way
    assert list(shared.clients[0].full.columns) == ["label", "c"] == list(alone.full.columns)
    assert list(shared.clients[1].full.columns) == ["label", "d"]


def test_rows_without_a_label_are_refused_not_dropped(tmp_path):
    # Arrange: two of site x's rows have no label (encoding used to drop them without a word)
    frame = _toy(n=40)
    frame["label"] = frame["label"].astype(float)
    frame.loc[[3, 5], "label"] = np.nan
    frame.to_csv(tmp_path / "gaps.csv", index=False)
    # Act / Assert
    with pytest.raises(InputError, match=r"gaps\.csv: 2 rows have no --label 'label' value \(first in data row 4\)"):
        load_csv_clients(tmp_path / "gaps.csv", label="label", client_column="site")


def test_a_column_only_one_client_fills_keeps_its_type_in_a_shared_csv(tmp_path):
    # Arrange: site x's integer codes, empty in site y's rows, read as float from the shared file
    from securefl.data.gl_csv import load_client_csv

    frame = _toy(n=40)
    frame["code"] = frame["code"].where(frame["site"] == "x")
    frame.to_csv(tmp_path / "all.csv", index=False)
    frame[frame["site"] == "x"].drop(columns="site").to_csv(tmp_path / "x.csv", index=False)
    # Act
    shared = load_csv_clients(tmp_path / "all.csv", label="label", client_column="site").clients[0].full
    alone = load_client_csv(tmp_path / "x.csv", label="label", name="x").full
    # Assert: whole numbers in both, so both encode it as categories
    assert shared["code"].dtype == alone["code"].dtype == np.int64
