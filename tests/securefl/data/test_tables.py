"""The two CSV readers every user file goes through: header and value checks."""

from pathlib import Path

import pandas as pd
import pytest

from protocols.errors import InputError
from securefl.data.tables import not_numeric, read_labelled_csv, read_party_csv


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("read", [lambda p: read_party_csv(p, "id"), lambda p: read_labelled_csv(p, label="y")])
@pytest.mark.parametrize(("text", "message"), [
    ("id,x,x,y\na,1,2,0\nb,3,4,1\n", r"bad\.csv: column name 'x' appears 2 times in the header"),
    # a trailing comma: pandas would take each row's first field as its index and shift every column left
    ("id,x,y\n1,10,0,\n2,20,1,\n", r"bad\.csv: data rows hold more fields than the header names"),
    # a table index written with the file: pandas would call it "Unnamed: 0" and train on it
    (",x,y\n0,1,0\n1,3,1\n", r"bad\.csv: column 1 of the header has no name"),
    ("id,x,,y\na,1,2,0\n", r"bad\.csv: column 3 of the header has no name"),
], ids=["column named twice", "trailing comma", "index column", "empty name"])
def test_a_header_that_does_not_fit_the_rows_is_refused(tmp_path, read, text, message):
    path = write(tmp_path, "bad.csv", text)

    with pytest.raises(InputError, match=message):
        read(path)


def test_a_real_column_named_like_pandas_renaming_is_accepted(tmp_path):
    path = write(tmp_path, "dotted.csv", "id,x,x.1,y\na,1,2,0\n")

    frame = read_party_csv(path, "id")

    assert list(frame.columns) == ["id", "x", "x.1", "y"]


@pytest.mark.parametrize("sep,shown", [(";", "';'"), ("\t", "'\\\\t'"), ("|", "'\\|'")])
def test_a_file_with_another_delimiter_says_so(tmp_path, sep, shown):
    path = write(tmp_path, "semi.csv", sep.join(["id", "x", "y"]) + "\n" + sep.join(["a", "1", "0"]) + "\n")

    with pytest.raises(InputError, match=rf"semi\.csv.*looks {shown}-separated, and securefl reads comma-separated"):
        read_party_csv(path, "id")
    with pytest.raises(InputError, match=rf"--label: column 'y' not in .*looks {shown}-separated"):
        read_labelled_csv(path, label="y")


def test_a_missing_column_in_a_comma_file_gives_no_delimiter_hint(tmp_path):
    path = write(tmp_path, "plain.csv", "id,x\na,1\n")

    with pytest.raises(InputError) as caught:
        read_labelled_csv(path, label="y")

    assert "separated" not in str(caught.value)


def test_an_infinite_value_in_a_user_table_is_refused_by_column(tmp_path):
    path = write(tmp_path, "inf.csv", "site,age,y\na,1.5,0\nb,-inf,1\n")

    with pytest.raises(InputError, match=r"inf\.csv: column 'age' holds infinite values"):
        read_labelled_csv(path, label="y")


def test_missing_values_are_left_to_the_method(tmp_path):
    path = write(tmp_path, "gaps.csv", "site,age,y\na,,0\nb,2,1\n")

    _, frame = read_labelled_csv(path, label="y", also=("--client-column", "site"))

    assert frame["age"].isna().sum() == 1


def test_the_label_and_the_client_column_must_differ(tmp_path):
    path = write(tmp_path, "sites.csv", "site,age,y\na,1,0\nb,2,1\n")

    with pytest.raises(InputError, match="--client-column and --label both name column 'site'"):
        read_labelled_csv(path, label="site", also=("--client-column", "site"))


def test_a_text_feature_is_named_with_its_first_stray_cell_and_row(tmp_path):
    path = write(tmp_path, "typo.csv", "a,b,y\n1,2,0\n3,,1\n5,4;5,0\n6,x,1\n")
    frame = read_labelled_csv(path, label="y")[1]

    error = not_numeric(path, "b", frame["b"])

    assert str(error) == f"{path}: column 'b' is not numeric ('4;5' in data row 3; encode it first or drop it)"


def test_a_text_feature_without_row_numbers_names_only_the_cell():
    column = pd.Series(["1", "two"], index=["r1", "r2"])

    error = not_numeric("t.csv", "c", column)

    assert str(error) == "t.csv: column 'c' is not numeric ('two'; encode it first or drop it)"


def test_infinities_are_checked_only_in_the_named_features(tmp_path):
    path = write(tmp_path, "ids.csv", "id,a,y\ninf,1,0\n2,2,1\n")

    frame = read_labelled_csv(path, label="y", features=["a"])[1]

    assert frame.shape == (2, 3)
    with pytest.raises(InputError, match="column 'id' holds infinite values"):
        read_labelled_csv(path, label="y")


def test_ids_are_read_as_the_text_in_the_file_and_empty_ones_are_refused(tmp_path):
    # Arrange
    from securefl.data.tables import exact_ids, read_text_column

    good = write(tmp_path, "ids.csv", "id,x\n007,1\n7,2\n 7,3\n")
    empty = write(tmp_path, "empty.csv", "id,x\n1,1\n,2\n")
    # Act
    ids = exact_ids(read_text_column(good, "id"), "ids.csv", "id")
    # Assert
    assert ids == ["007", "7", " 7"]
    with pytest.raises(InputError,
                       match=r"empty\.csv: column 'id' has 1 empty or blank ID cell\(s\) \(first in data row 2\)"):
        exact_ids(read_text_column(empty, "id"), "empty.csv", "id")


@pytest.mark.parametrize("read", [lambda p: read_party_csv(p, "id"), lambda p: read_labelled_csv(p, label="y")])
def test_a_key_file_given_as_a_csv_never_shows_its_key(tmp_path, read):
    # Arrange: keygen's private key file is one line of 64 hex digits, which pandas reads as the header
    key = "a8fba626" * 8
    path = write(tmp_path, "k1", key + "\n")
    # Act
    with pytest.raises(InputError) as info:
        read(path)
    # Assert: the file is named, the key is not (not even a part of it)
    assert "k1" in str(info.value) and key[:8] not in str(info.value)


def test_header_cells_that_look_like_a_key_are_not_shown():
    from securefl.data.tables import shown_columns

    assert shown_columns(["id", "ab" * 32, "y"]) == "id, <64 hex digits, not shown>, y"
    assert shown_columns(["a", "b", "c"], 2) == "a, b, ..."


def test_a_header_only_user_table_says_it_has_no_data_rows(tmp_path):
    with pytest.raises(InputError, match=r"hdr\.csv: no data rows \(only a header\)"):
        read_labelled_csv(write(tmp_path, "hdr.csv", "a0,a1,y\n"), label="y")


def test_csvs_are_staged_inside_the_out_folder_so_a_mount_point_works(tmp_path, monkeypatch):
    # Arrange: os.replace across file systems fails; record where each staged file comes from
    import os

    from securefl.data import tables

    moves, real = [], os.replace
    monkeypatch.setattr(tables.os, "replace", lambda src, dst: (moves.append((Path(src), Path(dst))), real(src, dst)))
    out = tmp_path / "out"
    # Act
    written = tables.write_csv_atomically(out, {"left.csv": pd.DataFrame({"id": ["a"]})})
    # Assert: staged within out itself (one file system), and nothing is left behind but the result
    assert written == [out / "left.csv"] and all(src.parent.parent == out for src, _ in moves)
    assert sorted(p.name for p in out.iterdir()) == ["left.csv"]


def test_a_failed_write_removes_the_out_folder_it_made(tmp_path, monkeypatch):
    # Arrange
    from securefl.data import tables

    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    # Act
    with pytest.raises(OSError):
        tables.write_csv_atomically(tmp_path / "out", {"left.csv": pd.DataFrame({"id": ["a"]})})
    # Assert
    assert list(tmp_path.iterdir()) == []
