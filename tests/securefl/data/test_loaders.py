"""load_party_csvs and check_overlap on tiny CSVs written by the tests."""

from pathlib import Path

import numpy as np
import pytest

from protocols.errors import DuplicateIDError, InputError
from securefl.data import PartyTable, VerticalDataset, check_overlap, load_party_csvs


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def bank(tmp_path):
    return write(tmp_path, "bank.csv", "id,y,income\n007,1,3.5\n2,0,1\n3,1,-2e3\n")


@pytest.fixture
def shop(tmp_path):
    return write(tmp_path, "shop.csv", "id,visits,spend\n3,4,1.25\n007,0,0\n9,2,7\n")


def test_two_parties_keep_exact_ids_and_convert_columns(bank, shop):
    data = load_party_csvs([shop, bank], id_column="id", label_column="y")

    assert data.active.name == "active" and data.passive[0].name == "passive"
    assert data.active.ids == ("007", "2", "3")  # exact strings: "007" is not 7
    assert data.active.feature_names == ("income",)
    assert data.active.features.dtype == np.float64
    np.testing.assert_array_equal(data.active.features[:, 0], [3.5, 1.0, -2000.0])
    assert data.active.labels.dtype == np.int64 and data.active.labels.tolist() == [1, 0, 1]
    assert data.passive[0].ids == ("3", "007", "9")
    assert data.passive[0].feature_names == ("visits", "spend")
    assert data.passive[0].labels is None
    assert not any("label" in note for note in data.notes)


def test_several_passive_parties_are_numbered_in_file_order(tmp_path, bank, shop):
    telco = write(tmp_path, "telco.csv", "id,minutes\n2,10\n3,20\n")

    data = load_party_csvs([shop, bank, telco], id_column="id", label_column="y")

    assert [p.name for p in data.passive] == ["passive1", "passive2"]
    assert data.passive[1].ids == ("2", "3")


def test_explicit_names_follow_the_files(bank, shop):
    data = load_party_csvs([bank, shop], id_column="id", label_column="y", names=["bank", "shop"])

    assert data.active.name == "bank" and data.passive[0].name == "shop"
    with pytest.raises(InputError, match="2 files"):
        load_party_csvs([bank, shop], id_column="id", label_column="y", names=["bank"])


@pytest.mark.parametrize("values, expected, mapping", [
    (["yes", "no", "yes"], [1, 0, 1], "'no' -> 0, 'yes' -> 1"),
    (["2", "1", "2.0"], [1, 0, 1], "1 -> 0, 2 -> 1"),
    (["-1", "1", "1"], [0, 1, 1], "-1 -> 0, 1 -> 1"),
])
def test_other_binary_labels_are_mapped_and_noted(tmp_path, shop, values, expected, mapping):
    rows = "".join(f"{i},{v},{i}\n" for i, v in zip(("007", "2", "3"), values))
    bank = write(tmp_path, "a.csv", "id,y,income\n" + rows)

    data = load_party_csvs([bank, shop], id_column="id", label_column="y")

    assert data.active.labels.tolist() == expected
    assert any(mapping in note and "a.csv" in note for note in data.notes)


def test_a_label_with_three_values_is_rejected_naming_the_file(tmp_path, shop):
    bank = write(tmp_path, "a.csv", "id,y,income\n007,0,1\n2,1,1\n3,2,1\n")

    with pytest.raises(InputError) as error:
        load_party_csvs([bank, shop], id_column="id", label_column="y")

    assert str(error.value).startswith(f"label column 'y' in {bank} has 3 distinct values (0, 1, 2);")
    assert str(error.value).endswith("STFL needs a binary label")


def test_a_label_with_one_value_is_rejected(tmp_path, shop):
    bank = write(tmp_path, "a.csv", "id,y,income\n007,1,1\n3,1,1\n")

    with pytest.raises(InputError, match="has 1 distinct value .*binary"):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


def test_no_file_with_the_label_is_rejected_listing_the_files(bank, shop):
    with pytest.raises(InputError) as error:
        load_party_csvs([bank, shop], id_column="id", label_column="target")

    assert "no file has label column 'target'" in str(error.value)
    assert str(bank) in str(error.value) and str(shop) in str(error.value)


def test_two_files_with_the_label_are_rejected_naming_both(tmp_path, bank):
    other = write(tmp_path, "other.csv", "id,y,z\n2,0,1\n3,1,1\n")

    with pytest.raises(InputError) as error:
        load_party_csvs([bank, other], id_column="id", label_column="y")

    assert "label column 'y' is in 2 files" in str(error.value)
    assert str(bank) in str(error.value) and str(other) in str(error.value)


def test_a_non_numeric_feature_names_file_and_column(tmp_path, bank):
    shop = write(tmp_path, "shop.csv", "id,city\n3,Paris\n2,Oslo\n")

    expected = r"shop\.csv: column 'city' is not numeric \('Paris' in data row 1\)"
    with pytest.raises(InputError, match=expected):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


@pytest.mark.parametrize("cells", [("", ""), ("NA", " "), ("nan", "?")])
def test_missing_cells_are_counted_and_named(tmp_path, bank, cells):
    shop = write(tmp_path, "shop.csv", f"id,visits\n3,1\n2,{cells[0]}\n007,{cells[1]}\n")

    with pytest.raises(InputError, match=r"shop\.csv: column 'visits' has 2 missing or empty cell\(s\)"
                                         r" \(first in data row 2\)"):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


def test_a_missing_label_cell_is_an_error(tmp_path, shop):
    bank = write(tmp_path, "bank.csv", "id,y,income\n007,1,1\n2,,1\n")

    with pytest.raises(InputError, match=r"bank\.csv: column 'y' has 1 missing"):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


def test_infinite_values_and_empty_ids_are_errors(tmp_path, bank):
    infinite = write(tmp_path, "inf.csv", "id,v\n3,inf\n")
    no_id = write(tmp_path, "noid.csv", "id,v\n3,1\n,2\n")

    with pytest.raises(InputError, match=r"inf\.csv: column 'v' holds infinite values"):
        load_party_csvs([bank, infinite], id_column="id", label_column="y")
    with pytest.raises(InputError, match=r"noid\.csv: column 'id' has 1 empty or blank ID cell"):
        load_party_csvs([bank, no_id], id_column="id", label_column="y")


def test_a_missing_id_column_names_the_file(tmp_path, bank):
    shop = write(tmp_path, "shop.csv", "key,v\n3,1\n")

    with pytest.raises(InputError, match=r"shop\.csv: no column 'id'"):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


def test_a_file_without_features_or_rows_is_an_error(tmp_path, bank, shop):
    only_label = write(tmp_path, "label.csv", "id,y\n3,1\n2,0\n")
    header_only = write(tmp_path, "empty.csv", "id,v\n")

    with pytest.raises(InputError, match=r"label\.csv: no feature columns besides 'id' and 'y'"):
        load_party_csvs([only_label, shop], id_column="id", label_column="y")
    with pytest.raises(InputError, match=r"empty\.csv: no data rows"):
        load_party_csvs([bank, header_only], id_column="id", label_column="y")


def test_duplicate_ids_raise_duplicate_id_error(tmp_path, bank):
    shop = write(tmp_path, "shop.csv", "id,v\n3,1\n2,1\n3,2\n")

    with pytest.raises(DuplicateIDError, match=r"shop\.csv: 1 duplicate ID"):
        load_party_csvs([bank, shop], id_column="id", label_column="y")


def test_a_passive_party_with_zero_common_ids_is_named(tmp_path, bank):
    shop = write(tmp_path, "shop.csv", "id,v\n7,1\n002,1\n")  # "002" is not "2": exact strings

    with pytest.raises(InputError) as error:
        load_party_csvs([bank, shop], id_column="id", label_column="y")

    assert f"passive party 'passive' ({shop}) has no IDs in common" in str(error.value)


def test_a_single_file_is_not_a_vertical_dataset(bank):
    with pytest.raises(InputError, match="at least two party files"):
        load_party_csvs([bank], id_column="id", label_column="y")
    with pytest.raises(InputError, match="a single path"):
        load_party_csvs(str(bank), id_column="id", label_column="y")


def table(name: str, ids: list[str], labels: bool = False) -> PartyTable:
    return PartyTable(name=name, ids=tuple(ids), features=np.zeros((len(ids), 1)), feature_names=("f",),
                      labels=np.zeros(len(ids), dtype=np.int64) if labels else None)


def test_check_overlap_counts_ids_held_by_every_party():
    data = VerticalDataset(name="t", active=table("active", ["1", "2", "3"], labels=True),
                           passive=(table("p1", ["2", "3", "4"]), table("p2", ["3", "1"])))

    assert check_overlap(data) == 1


def test_check_overlap_rejects_parties_that_overlap_only_pairwise():
    data = VerticalDataset(name="t", active=table("active", ["1", "2"], labels=True),
                           passive=(table("p1", ["1"]), table("p2", ["2"])))

    with pytest.raises(InputError, match="no ID is held by all 3 parties"):
        check_overlap(data)


def test_check_overlap_names_the_party_without_sources():
    data = VerticalDataset(name="t", active=table("active", ["1"], labels=True),
                           passive=(table("p1", ["1"]), table("p2", ["9"])))

    with pytest.raises(InputError, match="passive party 'p2' has no IDs in common with active party"):
        check_overlap(data)
