"""CHFL's natural clients: one shared file or each client's own, the same data either way."""

import numpy as np
import pandas as pd
import pytest

from protocols.errors import InputError
from securefl.data.chfl_clients import load_client_csv, load_csv_partition, parse_classes, parse_common


def _shared(folder, rows=(40, 50)):
    """Two sites sharing c1, c2; north has u1, u2, south has w1 (empty in the other's rows)."""
    rng = np.random.default_rng(0)
    frames = []
    for site, n, own in (("north", rows[0], ("u1", "u2")), ("south", rows[1], ("w1",))):
        frame = pd.DataFrame({"site": site, "c1": rng.normal(size=n), "c2": rng.integers(0, 5, n)})
        for column in own:
            frame[column] = rng.normal(size=n)
        frame["y"] = rng.choice(["b", "a"] if site == "north" else ["a", "b", "c"], size=n)
        frames.append(frame)
    path = folder / "sites.csv"
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    return path


def test_each_client_has_its_own_unique_columns_and_the_shared_classes(tmp_path):
    # Act
    partition = load_csv_partition(_shared(tmp_path), label="y", client_column="site", common=("c1", "c2"), seed=3)
    # Assert
    north, south = partition.clients
    assert [c.name for c in partition.clients] == ["north", "south"] and partition.n_classes == 3
    assert partition.settings["unique_features"] == {"north": ["u1", "u2"], "south": ["w1"]}
    assert north.train.unique.shape[1] == 2 and south.train.unique.shape[1] == 1
    # one index space for common and unique columns: the file's features c1, c2, u1, u2, w1
    assert partition.common_columns.tolist() == [0, 1]
    assert north.unique_columns.tolist() == [2, 3] and south.unique_columns.tolist() == [4]
    assert [len(s.labels) for s in (north.train, north.val, north.test)] == [24, 8, 8]
    assert set(np.concatenate([s.labels for s in (north.train, north.val, north.test)])) <= {0, 1}  # "a", "b"


def test_client_names_are_the_files_text_so_01_and_1_are_two_clients(tmp_path):
    # Arrange: before, "01" and "1" merged into one client "1"
    frame = pd.read_csv(_shared(tmp_path))
    frame["site"] = np.where(frame["site"] == "north", "01", "1")
    frame.to_csv(tmp_path / "numbered.csv", index=False)
    # Act
    partition = load_csv_partition(tmp_path / "numbered.csv", label="y", client_column="site", common=("c1",),
                                   seed=3)
    # Assert
    assert [c.name for c in partition.clients] == ["01", "1"]


def test_a_clients_own_file_gives_it_what_the_shared_file_gives_it(tmp_path):
    # Arrange
    path = _shared(tmp_path)
    frame = pd.read_csv(path)
    own = frame[frame.site == "south"].drop(columns="site").dropna(axis=1, how="all")
    own.to_csv(tmp_path / "south.csv", index=False)
    # Act
    shared = load_csv_partition(path, label="y", client_column="site", common=("c1", "c2"), seed=3).clients[1]
    alone = load_client_csv(tmp_path / "south.csv", name="south", label="y", common=("c1", "c2"),
                            classes=("a", "b", "c"), seed=3)
    # Assert
    for split in ("train", "val", "test"):
        for part in ("common", "unique", "labels"):
            np.testing.assert_array_equal(getattr(getattr(alone, split), part), getattr(getattr(shared, split), part))


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.assign(u1=f.u1.where(f.index != 3)), "column 'u1' is empty in 1 of client 'north'"),
    (lambda f: f.assign(site=f.site.where(f.index != 0)), "1 rows of"),
    (lambda f: f.assign(y=f.y.where(f.index != 0)), "sites.csv: 1 rows have no --label 'y' value"),
    (lambda f: f.assign(y="a"), "holds one class"),
    (lambda f: f.assign(c2=f.c2.where(f.site == "north")), "common column 'c2' is not a feature of client 'south'"),
    (lambda f: f.assign(u1=None, u2=None), "client 'north' has no features besides the common ones"),
    (lambda f: f.assign(site="only"), "gives 1 client"),
    (lambda f: f.assign(u1=f.u1.astype(object).where(f.index != 2, "high")),
     "column 'u1' is not numeric ('high' in data row 3;"),
])
def test_bad_shared_files_are_one_line_errors(tmp_path, edit, message):
    # Arrange
    path = _shared(tmp_path)
    edit(pd.read_csv(path)).to_csv(path, index=False)
    # Act / Assert
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        load_csv_partition(path, label="y", client_column="site", common=("c1", "c2"), seed=0)


def test_a_client_too_small_to_split_or_with_an_unknown_class_is_refused(tmp_path):
    # Arrange
    pd.DataFrame({"c1": [1.0, 2.0], "u": [0.5, 0.1], "y": ["a", "b"]}).to_csv(tmp_path / "tiny.csv", index=False)
    pd.DataFrame({"c1": np.arange(9.0), "u": np.arange(9.0), "y": ["a", "b", "z"] * 3}).to_csv(
        tmp_path / "odd.csv", index=False)
    kwargs = {"label": "y", "common": ("c1",), "classes": ("a", "b"), "seed": 0}
    # Act / Assert
    with pytest.raises(InputError, match="client 'tiny' has 2 rows, too few"):
        load_client_csv(tmp_path / "tiny.csv", name="tiny", **kwargs)
    with pytest.raises(InputError, match="client 'odd' has class 'z', which is not among the federation's classes"):
        load_client_csv(tmp_path / "odd.csv", name="odd", **kwargs)
    with pytest.raises(InputError, match="--csv file .*missing.csv not found"):
        load_client_csv(tmp_path / "missing.csv", name="x", **kwargs)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match="empty.csv: file is empty, expected a CSV with a header row"):
        load_client_csv(tmp_path / "empty.csv", name="x", **kwargs)


def test_the_schema_options_parse_or_say_what_they_need():
    assert parse_common("common=b, a", where="") == ("b", "a")
    assert parse_classes("yes,no,maybe") == ("maybe", "no", "yes")
    for text in ("common=a;unique=b|c", "unique=a", "common=", "common=a,a"):
        with pytest.raises(InputError, match="--features"):
            parse_common(text, where="with --role")
    for text in ("a", "a,a", "a,,b"):
        with pytest.raises(InputError, match="--classes must list two or more distinct"):
            parse_classes(text)


@pytest.mark.parametrize(("common", "message"), [
    (("c1", "y"), "common column 'y' is the --label column"),
    (("c1", "site"), "common column 'site' is the --client-column"),
])
def test_a_common_column_that_is_the_label_or_the_client_column_says_so(tmp_path, common, message):
    # Arrange
    path = _shared(tmp_path)
    # Act / Assert
    with pytest.raises(InputError, match=message):
        load_csv_partition(path, label="y", client_column="site", common=common, seed=0)
