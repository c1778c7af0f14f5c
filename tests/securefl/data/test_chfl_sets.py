"""CHFL datasets: registry entries, loaders, the partitioner and its one-line input errors."""

import os
import re

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.data.chfl_sets import (TabularDataset, chfl_partition, load_chfl_dataset, load_csv_dataset,
                                     parse_feature_spec, read_arff, read_libsvm)
from securefl.data.chfl_partition import sample_rows
from securefl.data.registry import get_dataset, list_datasets


def _toy(rows=100, features=10):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features))
    return TabularDataset("toy", x, (x[:, 0] > 0).astype(np.int64), tuple(f"f{i}" for i in range(features)),
                          ("neg", "pos"))


def test_registry_holds_the_papers_datasets_and_digits():
    # Act
    names = set(list_datasets("chfl"))
    # Assert
    assert {"covertype", "sensorless", "helena", "jannis", "aloi", "digits"} <= names
    assert get_dataset("covertype").available and get_dataset("digits").available
    assert not any(get_dataset(n).available for n in ("sensorless", "helena", "jannis", "aloi"))


def test_partition_divides_features_and_rows_disjointly():
    # Arrange
    ds = _toy()
    # Act
    part = chfl_partition(ds, n_clients=3, common_ratio=0.3, feature_seed=4, sample_seed=5)
    # Assert
    uniques = [set(c.unique_columns.tolist()) for c in part.clients]
    assert len(part.common_columns) == 3 and [len(u) for u in uniques] == [3, 2, 2]
    assert set(part.common_columns.tolist()).isdisjoint(set().union(*uniques))
    assert set(part.common_columns.tolist()) | set().union(*uniques) == set(range(10))
    rows = sum(len(s.labels) for c in part.clients for s in (c.train, c.val, c.test))
    assert rows == 100 and sum(len(c.train.labels) for c in part.clients) == 60


def test_clients_are_iid_even_when_the_file_is_sorted_by_class():
    # Arrange: 4 classes, rows ordered by class (as Kaggle's covertype file is ordered in stretches)
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(4), 250)
    ds = TabularDataset("sorted", rng.normal(size=(1000, 6)), labels, tuple(f"f{i}" for i in range(6)),
                        ("a", "b", "c", "d"))
    # Act
    part = chfl_partition(ds, n_clients=4, sample_seed=3)
    # Assert: every client trains on every class near its 25% share and tests on every class
    for c in part.clients:
        share = np.bincount(c.train.labels, minlength=4) / len(c.train.labels)
        assert share.min() > 0.1, (c.name, share)
        assert np.all(np.bincount(c.test.labels, minlength=4) > 0), c.name


def test_partition_is_reproducible_and_feature_seed_changes_the_split():
    ds = _toy()
    a = chfl_partition(ds, n_clients=2, feature_seed=0)
    b = chfl_partition(ds, n_clients=2, feature_seed=0)
    c = chfl_partition(ds, n_clients=2, feature_seed=1)
    np.testing.assert_array_equal(a.clients[0].train.unique, b.clients[0].train.unique)
    assert not np.array_equal(a.common_columns, c.common_columns)


def test_sample_rows_are_the_rows_each_client_is_dealt():
    # Arrange: labels that are the row numbers, so a client's labels say which rows it holds
    x = np.zeros((50, 4))
    ds = TabularDataset("rows", x, np.arange(50), tuple(f"f{i}" for i in range(4)), tuple(map(str, range(50))))
    # Act
    part = chfl_partition(ds, n_clients=3, feature_seed=0, sample_seed=7)
    rows = sample_rows(50, 3, 7)
    # Assert
    for k, c in enumerate(part.clients):
        for split, idx in zip((c.train, c.val, c.test), rows):
            np.testing.assert_array_equal(split.labels, idx[k])


def test_feature_spec_names_columns():
    # Arrange
    spec = parse_feature_spec("common=f0,f1;unique=f2,f3|f4")
    # Act
    part = chfl_partition(_toy(), spec=spec)
    # Assert
    assert part.n_clients == 2 and part.common_columns.tolist() == [0, 1]
    assert [c.unique_columns.tolist() for c in part.clients] == [[2, 3], [4]]


@pytest.mark.parametrize("text", ["common=f0;f1;unique=f2|f4", "common=f0;common=f1;unique=f2|f4",
                                  "common=f0;unique=f2|f3;unique=f4|f5", "common=f0;unique=f2|f4;xyz"])
def test_a_spec_part_that_would_be_dropped_or_overridden_is_refused(text):
    # Arrange: ';' typed for ',', a part given twice, a stray part: each used to vanish without a word
    # Act / Assert
    with pytest.raises(InputError, match="--features .*expected exactly"):
        parse_feature_spec(text)


def test_a_trailing_semicolon_and_spaces_around_names_are_fine():
    assert parse_feature_spec("common = f0, f1; unique=f2|f4;") == parse_feature_spec("common=f0,f1;unique=f2|f4")


def test_overlapping_common_and_unique_spec_is_rejected_naming_the_column():
    spec = parse_feature_spec("common=f0,f1;unique=f1,f3|f4")
    with pytest.raises(InputError, match="'f1'.*common and unique"):
        chfl_partition(_toy(), spec=spec)


@pytest.mark.parametrize(("text", "message"), [
    ("common=f0,f0;unique=f2|f4", "column 'f0' is listed twice in common"),
    ("common=f0;unique=f2,f2|f4", r"column 'f2' is listed twice in unique\[0\]"),
    ("common=f0;unique=f2,f3", r"1 group of unique columns, so 1 client; give one \|-separated group per client"),
])
def test_a_spec_with_a_repeated_column_or_one_client_says_exactly_that(text, message):
    with pytest.raises(InputError, match=message):
        chfl_partition(_toy(), spec=parse_feature_spec(text))


def test_a_client_with_no_rows_is_rejected():
    with pytest.raises(InputError, match=r"client 'c\d' gets no (training|validation|test) rows"):
        chfl_partition(_toy(rows=8), n_clients=5)


def test_unknown_dataset_is_an_input_error():
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        load_chfl_dataset("nope")


def test_digits_loads_without_files():
    ds = load_chfl_dataset("digits")
    assert ds.features.shape == (1797, 64) and ds.n_classes == 10


def test_user_csv_loads_and_reports_a_missing_label(tmp_path):
    # Arrange
    good = tmp_path / "mine.csv"
    good.write_text("a,b,y\n1,2,x\n3,4,z\n5,6,x\n")
    empty = tmp_path / "nolabel.csv"
    empty.write_text("a,b,y\n1,2,\n3,4,\n")
    # Act
    ds = load_csv_dataset(good, label="y")
    # Assert
    assert ds.feature_names == ("a", "b") and ds.labels.tolist() == [0, 1, 0]
    with pytest.raises(InputError, match="rows have no --label 'y' value"):
        load_csv_dataset(empty, label="y")
    with pytest.raises(InputError, match=r"--label: column 'target' not in .*mine\.csv \(columns: a, b, y\)"):
        load_csv_dataset(good, label="target")


def test_user_csv_with_a_text_or_missing_feature_is_a_clear_error(tmp_path):
    # Arrange: pandas 3 reads text as its own str dtype, which numpy cannot interpret
    text = tmp_path / "sites.csv"
    text.write_text("a,site,y\n1,north,0\n3,south,1\n")
    gap = tmp_path / "gap.csv"
    gap.write_text("a,b,y\n1,,0\n3,4,1\n")
    flags = tmp_path / "flags.csv"
    flags.write_text("a,flag,y\n1,True,0\n3,False,1\n")
    # Act / Assert
    with pytest.raises(InputError, match=r"sites\.csv: column 'site' is not numeric \('north' in data row 1;"):
        load_csv_dataset(text, label="y")
    with pytest.raises(InputError, match=r"gap\.csv.*'b'"):
        load_csv_dataset(gap, label="y")
    assert load_csv_dataset(flags, label="y").features[:, 1].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(("text", "message"), [
    ("", "file is empty"),
    ("a;b;y\n1;2;0\n", "the file looks ';'-separated"),
    ("a,a,y\n1,2,0\n", "column name 'a' appears 2 times in the header"),
    ("a,b,y\n1,inf,0\n3,4,1\n", "column 'b' holds infinite values"),
])
def test_a_bad_user_csv_is_one_error_naming_the_file(tmp_path, text, message):
    # Arrange
    path = tmp_path / "mine.csv"
    path.write_text(text)
    # Act / Assert
    with pytest.raises(InputError, match=message) as err:
        load_csv_dataset(path, label="y")
    assert "mine.csv" in str(err.value)


def test_undecodable_user_csv_is_one_error(tmp_path):
    # Arrange: UTF-16 bytes, not the UTF-8 CSV expected
    path = tmp_path / "wide.csv"
    path.write_bytes("a,b,y\n1,2,0\n".encode("utf-16"))
    # Act / Assert
    with pytest.raises(InputError, match=r"wide\.csv: cannot read CSV"):
        load_csv_dataset(path, label="y")


def test_user_csv_with_named_columns_ignores_the_others_text_included(tmp_path):
    # Arrange: a feature spec names a, c and d; 'site' is text and 'b' is not named
    table = tmp_path / "named.csv"
    table.write_text("site,a,b,c,d,y\nnorth,1,9,2,3,x\nsouth,4,9,5,6,z\n")
    # Act
    ds = load_csv_dataset(table, label="y", columns=["d", "a", "c"])
    # Assert: the named columns in the file's order; unnamed ones neither loaded nor checked
    assert ds.feature_names == ("a", "c", "d")
    assert ds.features.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    table.write_text("site,a,b,c,d,y\nnorth,1,inf,2,3,x\nsouth,4,9,5,6,z\n")  # an unnamed column's inf: unread
    assert load_csv_dataset(table, label="y", columns=["d", "a", "c"]).features.shape == (2, 3)
    with pytest.raises(InputError, match="'site' is not numeric"):
        load_csv_dataset(table, label="y", columns=["site", "a"])
    with pytest.raises(InputError, match="names column 'y', which is the --label column"):
        load_csv_dataset(table, label="y", columns=["a", "y"])


def test_arff_and_libsvm_readers(tmp_path):
    # Arrange
    arff = tmp_path / "jannis.arff"
    arff.write_text("@relation j\n@attribute 'class' {0,1}\n@attribute V1 numeric\n@attribute V2 numeric\n"
                    "@data\n1,0.5,2\n0,1.5,3\n")
    svm = tmp_path / "aloi.scale"
    svm.write_text("3 1:0.5 3:1\n7 2:0.25\n")
    # Act
    a = read_arff(arff, name="jannis")
    s = read_libsvm(svm, name="aloi")
    # Assert
    assert a.features.tolist() == [[0.5, 2.0], [1.5, 3.0]] and a.labels.tolist() == [1, 0]
    assert s.features.tolist() == [[0.5, 0.0, 1.0], [0.0, 0.25, 0.0]] and s.classes == ("3", "7")


@pytest.mark.skipif(not os.environ.get("SECUREFL_DATA"), reason="SECUREFL_DATA is not set (covertype file)")
def test_covertype_from_the_data_folder():
    ds = load_chfl_dataset("covertype")
    assert ds.features.shape == (15120, 54) and np.bincount(ds.labels).tolist() == [2160] * 7


def test_user_csv_whose_label_holds_one_class_is_refused(tmp_path):
    # Arrange: every row labelled 1 (1.0 reads as the same class); a run used to score accuracy 1.0
    path = tmp_path / "one.csv"
    path.write_text("a,b,y\n1,2,1\n3,4,1.0\n5,6,1\n")
    # Act / Assert
    with pytest.raises(InputError, match=re.escape(f"--label 'y': {path} holds one class; classification needs two")):
        load_csv_dataset(path, label="y")
