"""The file formats of the CHFL datasets not stored here (sensorless, helena, jannis, aloi).

Their files are absent on this machine, so each reader is checked on a tiny file of
the same format, placed where the registry looks for the real one.
"""

import bz2
import gzip

import numpy as np
import pytest

from protocols.errors import InputError
from securefl.data.chfl_sets import TabularDataset, read_arff, read_libsvm
from securefl.data.registry import load_registered

ARFF = ("% a comment\n@relation h\n@attribute V1 numeric\n@attribute 'class' {a,b}\n@attribute V2 numeric\n\n"
        "@data\n0.5,b,2\n1.5,a,3\n")
LIBSVM = "3 1:0.5 3:1\n\n7 2:0.25\n"


def test_sensorless_loads_from_its_uci_text_file_in_the_data_folder(tmp_path):
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


def test_aloi_reads_libsvms_bz2_file_in_the_data_folder(tmp_path):
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
def test_helena_and_jannis_read_their_arff_with_the_class_column_anywhere(tmp_path, name, width):
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
