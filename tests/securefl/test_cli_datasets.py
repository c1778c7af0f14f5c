"""``securefl datasets``: the registry, with each file's state under a data folder."""

from __future__ import annotations

import hashlib
import json

import pytest

import securefl.commands.datasets as command
from securefl.cli import main
from securefl.data.entries import DataFile, DatasetEntry
from securefl.data.registry import DATA_ENV, REGISTRY, list_datasets

GOOD = b"id,x\n1,2\n"


def _toy_registry(monkeypatch, *files: str) -> None:
    """Replace the registry with one 'toy' GL entry whose files have GOOD's checksum, and a bundled one."""
    digest = hashlib.sha256(GOOD).hexdigest()
    toy = DatasetEntry(name="toy", paper="GL", paper_name="Toy", description="a toy set",
                       files=tuple(DataFile(f, digest) for f in files), source="tests", licence="none",
                       parties="two clients", n_rows=1, loader=lambda paths: None, kind="gl")
    bundled = DatasetEntry(name="packed", paper="STFL", paper_name="Packed", description="in the package",
                           files=(), source="tests", licence="none", parties="two", n_rows=3,
                           loader=lambda paths: None)
    monkeypatch.setattr(command, "REGISTRY", {"toy": toy, "packed": bundled})


def test_without_a_data_folder_it_lists_every_registered_dataset_and_its_methods(monkeypatch, capsys):
    # Arrange
    monkeypatch.delenv(DATA_ENV, raising=False)
    # Act
    code = main(["datasets"])
    # Assert
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and out[0].startswith("no data folder")
    assert sorted(line.split()[0] for line in out[1:]) == list_datasets()
    by_name = {line.split()[0]: line for line in out[1:]}
    assert "stfl, he-vfl, hierarchical, centralized" in by_name["breast"]
    assert "gl, fedavg, local, centralized" in by_name["gl_covertype"]
    assert "centralized" not in by_name["gl_heart"] and "bundled" in by_name["digits"]


@pytest.mark.parametrize(("content", "verify", "phrase"), [
    (GOOD, False, "ready: 2 files present"),
    (GOOD, True, "ready: 2 files present, checksums verified"),
    (b"id,x\n1,3\n", False, "ready: 2 files present"),  # a damaged file is only found by --verify
    (b"id,x\n1,3\n", True, "damaged: toy/b.csv, 1 of 2 files"),
    (None, False, "missing: toy/b.csv, 1 of 2 files"),
])
def test_each_file_is_looked_up_where_a_run_would_look(monkeypatch, capsys, tmp_path, content, verify, phrase):
    # Arrange
    _toy_registry(monkeypatch, "toy/a.csv", "toy/b.csv")
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "a.csv").write_bytes(GOOD)
    if content is not None:
        (tmp_path / "toy" / "b.csv").write_bytes(content)
    # Act
    code = main(["datasets", "--data-dir", str(tmp_path), *(["--verify"] if verify else [])])
    # Assert
    out = capsys.readouterr().out
    assert code == (1 if phrase.startswith("damaged") else 0) and f"data folder: {tmp_path}" in out
    toy_line = next(line for line in out.splitlines() if line.startswith("toy "))
    assert toy_line.endswith(phrase) and "gl, fedavg, local" in toy_line
    assert "bundled (no files needed)" in out


@pytest.mark.parametrize(("content", "code", "last"), [
    (b"id,x\n1,3\n", 1, "verify: 1 file damaged (toy/b.csv): sha256 differs from the registry's"),
    (GOOD, 0, "verify: every file present with a registered checksum matches it"),
    (None, 0, "verify: every file present with a registered checksum matches it"),  # missing: not on this machine
])
def test_verify_exits_1_when_a_file_present_is_damaged_and_says_so_last(monkeypatch, capsys, tmp_path, content,
                                                                         code, last):
    # Arrange
    _toy_registry(monkeypatch, "toy/a.csv", "toy/b.csv")
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "a.csv").write_bytes(GOOD)
    if content is not None:
        (tmp_path / "toy" / "b.csv").write_bytes(content)
    # Act
    status = main(["datasets", "--data-dir", str(tmp_path), "--verify"])
    # Assert
    assert status == code and capsys.readouterr().out.splitlines()[-1] == last


def test_json_records_each_files_state_and_details_print_the_source(monkeypatch, capsys, tmp_path):
    # Arrange
    _toy_registry(monkeypatch, "toy/a.csv")
    target = tmp_path / "out" / "datasets.json"
    # Act
    code = main(["datasets", "--data-dir", str(tmp_path), "--details", "--json", str(target)])
    # Assert
    record = json.loads(target.read_text())
    toy = next(d for d in record["datasets"] if d["name"] == "toy")
    assert code == 0 and record["data_dir"] == str(tmp_path) and record["verified"] is False
    assert toy["files"] == [{"path": "toy/a.csv", "sha256": hashlib.sha256(GOOD).hexdigest(), "state": "missing"}]
    assert toy["methods"] == ["gl", "fedavg", "local"] and toy["status"].startswith("missing")
    assert "    source: tests" in capsys.readouterr().out


def test_a_data_folder_that_does_not_exist_is_a_one_line_error(capsys, tmp_path):
    # Act
    code = main(["datasets", "--data-dir", str(tmp_path / "nope")])
    # Assert
    assert code == 2 and capsys.readouterr().err.startswith("securefl datasets: error: data folder")


def test_every_registered_kind_has_its_methods():
    assert {entry.kind for entry in REGISTRY.values()} <= set(command.METHODS)


def test_pooled_is_a_gl_flag():
    # Arrange
    fields = dict(name="v", paper="STFL", paper_name="V", description="d", files=(), source="s", licence="l",
                  parties="p", n_rows=1, loader=lambda paths: None)
    # Act / Assert
    assert command.methods(DatasetEntry(**fields, kind="gl", pooled=True))[-1] == "centralized"
    with pytest.raises(ValueError, match="pooled is a GL flag"):
        DatasetEntry(**fields, kind="vertical", pooled=True)


def test_centralized_is_listed_for_exactly_the_gl_datasets_a_centralized_run_takes():
    # Arrange: the rule itself lives in baselines.gl_baselines.pooled_table; DatasetEntry.pooled must follow it
    import os

    from baselines.gl_baselines import pooled_table
    from protocols.errors import InputError
    from securefl.data.registry import load_registered

    if not os.environ.get(DATA_ENV):
        pytest.skip(f"{DATA_ENV} is not set: the GL dataset files are not available")
    for entry in (e for e in REGISTRY.values() if e.kind == "gl" and e.available):
        dataset = load_registered(entry.name, kind="gl")
        # Act
        try:
            pooled_table(dataset, dataset.split(0))
            takes = True
        except InputError:
            takes = False
        # Assert
        assert takes == ("centralized" in command.methods(entry)), entry.name
