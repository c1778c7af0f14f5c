"""The dataset registry: lookups, the data folder, file checks and the file-free default."""

import dataclasses
import hashlib
import re
from types import MappingProxyType

import numpy as np
import pytest

import securefl.data.registry as registry
from protocols.errors import InputError
from securefl.data import (DEFAULT_DATASET, REGISTRY, DataFile, data_dir, get_dataset, list_datasets,
                           load_vertical)
from securefl.data.registry import DATA_ENV, file_state, load_registered, verify_file

STFL_DATASETS = {"breast", "default_credit", "give_credit", "breast_sklearn"}


def test_every_dataset_is_registered_with_a_complete_entry():
    assert STFL_DATASETS <= set(list_datasets())
    assert list_datasets() == sorted(list_datasets())
    for name in list_datasets():
        entry = get_dataset(name)
        assert entry.name == name
        assert entry.description and entry.source and entry.licence and entry.parties and entry.paper
        assert entry.n_rows > 0
        for data_file in entry.files:
            # only datasets missing from ../shared/data may lack a checksum (never-seen files)
            assert re.fullmatch(r"[0-9a-f]{64}", data_file.sha256 or "") or not entry.available
            assert not data_file.path.startswith("/") and ".." not in data_file.path
    assert get_dataset("default_credit").paper_name == "payment"
    assert get_dataset("give_credit").paper_name == "credit"


def test_the_registry_and_its_entries_are_read_only():
    with pytest.raises(TypeError):
        REGISTRY["mine"] = REGISTRY["breast"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        REGISTRY["breast"].n_rows = 1  # type: ignore[misc]


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(InputError) as error:
        get_dataset("cifar10")

    message = str(error.value)
    assert message.startswith("unknown dataset 'cifar10'; known datasets: ")
    assert all(name in message for name in STFL_DATASETS)
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        load_vertical("nope")


def test_data_dir_prefers_the_explicit_folder_then_the_environment(tmp_path, monkeypatch):
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    monkeypatch.setenv(DATA_ENV, str(env_dir))

    assert data_dir(tmp_path) == tmp_path
    assert data_dir() == env_dir
    assert data_dir("") == env_dir


def test_data_dir_without_a_folder_says_how_to_give_one(monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)

    with pytest.raises(InputError, match=re.escape("dataset 'breast' needs its files under a data folder:"
                                                   " pass --data-dir or set SECUREFL_DATA")):
        load_vertical("breast")
    with pytest.raises(InputError, match="is not a folder"):
        data_dir("/nonexistent/securefl-data")


def test_the_default_dataset_needs_no_files(monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)

    data = load_vertical(DEFAULT_DATASET)

    assert data.name == "breast_sklearn" and data.description == get_dataset("breast_sklearn").description
    assert data.active.ids == tuple(str(i) for i in range(569)) == data.passive[0].ids
    assert (data.active.n_features, data.passive[0].n_features) == (10, 20)
    assert data.active.feature_names[0] == "mean radius"
    assert data.passive[0].feature_names[0] == "radius error"
    assert data.active.features.dtype == data.passive[0].features.dtype == np.float64
    assert data.active.labels.dtype == np.int64
    assert np.bincount(data.active.labels).tolist() == [212, 357]  # sklearn: 0 = malignant
    assert data.active.labels[0] == 0  # the first record is malignant


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError) as error:
        load_vertical("breast", data_dir=tmp_path)

    assert str(tmp_path / "stfl" / "breast_hetero_guest.csv.gz") in str(error.value)
    assert "not found" in str(error.value)


def test_a_checksum_mismatch_names_the_file_and_both_hashes(tmp_path):
    path = tmp_path / "stfl" / "breast_hetero_guest.csv.gz"
    path.parent.mkdir()
    path.write_bytes(b"id,y,x0\n1,0,0.5\n")
    expected = get_dataset("breast").files[0].sha256
    actual = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(InputError) as error:
        load_vertical("breast", data_dir=tmp_path)

    assert str(error.value) == (f"dataset 'breast': {path} has sha256 {actual}, but the registry expects"
                                f" {expected}; the file is damaged or a different version")


def test_verify_file_accepts_a_matching_file(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"abc")
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    assert verify_file(tmp_path, DataFile("a.txt", abc), dataset="t") == tmp_path / "a.txt"


def test_file_state_says_where_a_file_stands_without_raising(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"abc")
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    wrong = "0" * 64

    assert file_state(tmp_path, DataFile("b.txt", abc)) == ("missing", None)
    assert file_state(tmp_path, DataFile("a.txt", abc)) == ("verified", abc)
    assert file_state(tmp_path, DataFile("a.txt", wrong)) == ("damaged", abc)
    assert file_state(tmp_path, DataFile("a.txt", wrong), verify=False) == ("present", None)
    assert file_state(tmp_path, DataFile("a.txt", None)) == ("present", None)


def _superconductivity(folder, rows: int):
    """UCI Superconductivity's layout (a header, 81 features, critical_temp last) with ``rows`` rows."""
    path = folder / "tdcd" / "superconductivity_train.csv"
    path.parent.mkdir()
    header = ",".join([*(f"f{i}" for i in range(81)), "critical_temp"])
    path.write_text(header + "\n" + "".join(",".join(["1.5"] * 82) + "\n" for _ in range(rows)))
    return path


def test_a_truncated_file_without_a_checksum_is_refused_naming_it_and_both_counts(tmp_path):
    # Arrange: the right 81 features, but 3 rows where UCI's file has 21263
    path = _superconductivity(tmp_path, 3)

    with pytest.raises(InputError) as error:
        load_registered("superconductivity", kind="tdcd", data_dir=tmp_path)

    assert str(error.value) == (f"dataset 'superconductivity': {path} has 3 rows where the registry expects"
                                " 21263; is the file truncated or a different version?")


def test_a_file_without_a_checksum_loads_when_its_rows_match_the_registry(tmp_path, monkeypatch):
    # Arrange: a 3-row stand-in, registered as 3 rows
    _superconductivity(tmp_path, 3)
    entries = dict(registry.REGISTRY)
    entries["superconductivity"] = dataclasses.replace(entries["superconductivity"], n_rows=3)
    monkeypatch.setattr(registry, "REGISTRY", MappingProxyType(entries))

    table = load_registered("superconductivity", kind="tdcd", data_dir=tmp_path)

    assert table.x.shape == (3, 81) and table.y.tolist() == [1.5] * 3
