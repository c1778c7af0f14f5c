"""The file formats of the CHFL datasets not stored here (sensorless, helena, jannis, aloi).

Their files are absent on this machine, so each reader is checked on a tiny file of
the same format, placed where the registry looks for the real one.
"""

import bz2
import dataclasses
import gzip
import re
from types import MappingProxyType

import numpy as np
import pytest

import securefl.data.registry as registry
from protocols.errors import InputError
from securefl.data.chfl_sets import TabularDataset, read_arff, read_libsvm
from securefl.data.registry import load_registered

ARFF = ("% a comment\n@relation h\n@attribute V1 numeric\n@attribute 'class' {a,b}\n@attribute V2 numeric\n\n"
        "@data\n0.5,b,2\n1.5,a,3\n")
LIBSVM = "3 1:0.5 3:1\n\n7 2:0.25\n"


@pytest.fixture
def two_rows(monkeypatch):
    """Register the CHFL sets with 2 rows: these tests' files are 2-row stand-ins, and a file without a
    checksum is refused when its rows differ from the registry's count."""
    entries = {name: dataclasses.replace(entry, n_rows=2) if entry.kind == "chfl" else entry
               for name, entry in registry.REGISTRY.items()}
    monkeypatch.setattr(registry, "REGISTRY", MappingProxyType(entries))


def test_sensorless_loads_from_its_uci_text_file_in_the_data_folder(tmp_path, two_rows):
    # Arrange: UCI's layout, 48 space-separated features then the class 1..11
    rows = np.hstack([np.arange(96, dtype=float).reshape(2, 48), [[11.0], [2.0]]])
    (tmp_path / "chfl").mkdir()
    np.savetxt(tmp_path / "chfl" / "Sensorless_drive_diagnosis.txt", rows)

    # Act
    ds = load_registered("sensorless", kind="chfl", data_dir=tmp_path)

    # Assert: classes in sorted numeric order, features as written
    assert isinstance(ds, TabularDataset) and ds.name == "sensorless"
    assert ds.features.shape == (2, 48) and ds.feature_names[0] == "x0" and ds.feature_names[-1] == "x47"
    assert ds.classes == ("2", "11") and ds.labels.tolist() == [1, 0]
    np.testing.assert_array_equal(ds.features, rows[:, :48])


def test_sensorless_with_another_width_is_refused_naming_the_file(tmp_path):
    # Arrange
    path = tmp_path / "chfl" / "Sensorless_drive_diagnosis.txt"
    path.parent.mkdir()
    np.savetxt(path, np.zeros((2, 10)))

    # Act / Assert
    with pytest.raises(InputError, match=r"Sensorless_drive_diagnosis.txt: expected 49 space-separated columns"):
        load_registered("sensorless", kind="chfl", data_dir=tmp_path)


def test_aloi_reads_libsvms_bz2_file_in_the_data_folder(tmp_path, two_rows):
    # Arrange: the registered file is LIBSVM's aloi.scale.bz2
    (tmp_path / "chfl").mkdir()
    (tmp_path / "chfl" / "aloi.scale.bz2").write_bytes(bz2.compress(LIBSVM.encode()))

    # Act
    ds = load_registered("aloi", kind="chfl", data_dir=tmp_path)

    # Assert: 1-based indices, absent entries zero (to ALOI's 128 features), blank lines skipped
    assert ds.name == "aloi" and ds.feature_names[:3] == ("x1", "x2", "x3") and ds.features.shape == (2, 128)
    assert ds.features[:, :3].tolist() == [[0.5, 0.0, 1.0], [0.0, 0.25, 0.0]] and ds.classes == ("3", "7")
    assert not ds.features[:, 3:].any()


def _arff(features: int) -> str:
    """A dense ARFF of ``features`` numeric attributes with the class column second."""
    names = [f"V{i}" for i in range(1, features + 1)]
    header = [f"@attribute {names[0]} numeric", "@attribute 'class' {a,b}",
              *(f"@attribute {n} numeric" for n in names[1:])]
    rows = [",".join([str(r + 0.5), "ba"[r], *(str(float(r + i)) for i in range(2, features + 1))]) for r in (0, 1)]
    return "@relation h\n" + "\n".join(header) + "\n@data\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize(("name", "file"), [("helena", "helena.arff"), ("jannis", "jannis.arff"),
                                            ("aloi", "aloi.scale.bz2")])
def test_a_file_of_another_width_is_refused_as_not_the_registered_one(tmp_path, name, file):
    # Arrange: these files are registered without a checksum, so their shape is checked instead
    (tmp_path / "chfl").mkdir()
    text = _arff(5) if file.endswith(".arff") else "1 129:0.5\n"
    path = tmp_path / "chfl" / file
    path.write_bytes(bz2.compress(text.encode()) if file.endswith(".bz2") else text.encode())
    # Act / Assert
    with pytest.raises(InputError, match=f"{file}: .* {name} has .*; is it the right file"):
        load_registered(name, kind="chfl", data_dir=tmp_path)


@pytest.mark.parametrize(("name", "width"), [("helena", 27), ("jannis", 54)])
def test_helena_and_jannis_read_their_arff_with_the_class_column_anywhere(tmp_path, two_rows, name, width):
    # Arrange
    (tmp_path / "chfl").mkdir()
    (tmp_path / "chfl" / f"{name}.arff").write_text(_arff(width))

    # Act
    ds = load_registered(name, kind="chfl", data_dir=tmp_path)

    # Assert
    assert ds.name == name and ds.feature_names[:2] == ("V1", "V2") and len(ds.feature_names) == width
    assert ds.features[:, :2].tolist() == [[0.5, 2.0], [1.5, 3.0]]
    assert ds.classes == ("a", "b") and ds.labels.tolist() == [1, 0]


def test_gzipped_arff_and_libsvm_read_as_the_plain_files(tmp_path):
    # Arrange
    arff, svm = tmp_path / "t.arff.gz", tmp_path / "t.svm.gz"
    arff.write_bytes(gzip.compress(ARFF.encode()))
    svm.write_bytes(gzip.compress(LIBSVM.encode()))

    # Act
    a, s = read_arff(arff), read_libsvm(svm, name="t")

    # Assert: the name drops every suffix
    assert a.name == "t" and a.features.tolist() == [[0.5, 2.0], [1.5, 3.0]]
    assert s.features.tolist() == [[0.5, 0.0, 1.0], [0.0, 0.25, 0.0]]


@pytest.mark.parametrize(("text", "kwargs", "message"), [
    (ARFF, {"target": "label"}, "target column 'label' not among its ARFF attributes"),
    ("@attribute class {a}\n@attribute V1 numeric\n@data\na,1\na,1,2\n", {}, "data rows do not have 2 values each"),
    ("@attribute class {a}\n@attribute V1 numeric\n@data\n{0 a, 1 2}\n", {}, "sparse ARFF rows .* are not supported"),
    ("@attribute class {a}\n@attribute V1 string\n@data\na,red\n", {},
     r"attribute 'V1' is not numeric \('red' in data row 1\)"),
    ("@attribute class {a}\n@attribute V1 numeric\n@data\na,1\na,?\n", {},
     r"attribute 'V1' is not numeric \('\?' in data row 2\)"),
    ("@attribute class {a}\n@attribute V1 numeric\n@data\na,nan\n", {}, "column 'V1' holds missing or non-finite"),
])
def test_a_bad_arff_is_one_error_naming_the_file(tmp_path, text, kwargs, message):
    # Arrange
    path = tmp_path / "bad.arff"
    path.write_text(text)

    # Act / Assert
    with pytest.raises(InputError, match=message) as err:
        read_arff(path, **kwargs)
    assert str(err.value).startswith(f"{path}: ")


def test_a_libsvm_line_out_of_format_is_named_by_number(tmp_path):
    # Arrange
    path = tmp_path / "bad.svm"
    path.write_text("1 1:0.5\n2 1=0.5\n")

    # Act / Assert
    with pytest.raises(InputError, match=r"bad.svm: line 2 is not in LIBSVM format"):
        read_libsvm(path, name="bad")


@pytest.mark.parametrize(("rows", "message"), [
    ("1 2 3\n4 abc 6\n", r"line 2: 'abc' is not a number"),
    ("1 2 3\n\n4 5\n", "line 3 has 2 values where the first line has 3"),
])
def test_sensorless_text_that_is_not_a_table_of_numbers_names_the_file_and_line(tmp_path, rows, message):
    # Arrange: the file is registered without a checksum, so nothing but its reader stops a wrong one
    path = tmp_path / "chfl" / "Sensorless_drive_diagnosis.txt"
    path.parent.mkdir()
    path.write_text(rows)
    # Act / Assert
    with pytest.raises(InputError, match=message) as err:
        load_registered("sensorless", kind="chfl", data_dir=tmp_path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


@pytest.mark.parametrize(("text", "message"), [
    ("1 1:0.5\nyes 2:0.5\n", "line 2 is not in LIBSVM format"),
    ("1 1:0.5\n2.5 2:0.5\n", r"line 2: class label '2.5' is not a whole number"),
    ("1 1:0.5\n2 0:0.5\n", "line 2: feature index 0; LIBSVM indices start at 1"),
    ("1 1:0.5\n2 -3:0.5\n", "line 2: feature index -3; LIBSVM indices start at 1"),
    ("1 3:0.5\n2 4:0.5\n", "line 2: feature index 4 where t has 3 features; is it the right file"),
])
def test_a_bad_libsvm_label_or_index_is_refused_naming_the_line(tmp_path, text, message):
    # Arrange: index 0 used to land in the last column, a text label to escape as a traceback
    path = tmp_path / "t.svm"
    path.write_text(text)
    # Act / Assert
    with pytest.raises(InputError, match=message) as err:
        read_libsvm(path, name="t", width=3)
    assert str(err.value).startswith(f"{path}: ")


def test_a_truncated_file_without_a_checksum_is_refused_by_its_row_count(tmp_path):
    # Arrange: two rows of the right width, where the registry counts 58509
    path = tmp_path / "chfl" / "Sensorless_drive_diagnosis.txt"
    path.parent.mkdir()
    np.savetxt(path, np.hstack([np.zeros((2, 48)), [[1.0], [2.0]]]))
    # Act / Assert
    with pytest.raises(InputError, match=re.escape(f"dataset 'sensorless': {path} has 2 rows where the registry"
                                                   " expects 58509; is the file truncated")):
        load_registered("sensorless", kind="chfl", data_dir=tmp_path)
