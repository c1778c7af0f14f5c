"""``securefl run tdcd``: the bundled default, the result object, secure vs plain, one-line errors."""

import json

import numpy as np
import pandas as pd
import pytest

from securefl.cli import main


def _run(argv, out):
    code = main(["run", "tdcd", *argv, "--no-progress", "--json", str(out)])
    return code, json.loads(out.read_text()) if out.exists() else None


def test_the_bundled_default_runs_and_writes_the_agreed_fields(tmp_path, capsys):
    # Arrange / Act
    code, result = _run(["--rounds", "6", "--silos", "3", "--clients", "2", "--lr", "0.05"], tmp_path / "r.json")
    # Assert
    assert code == 0
    assert {"method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings"} <= set(result)
    assert result["method"] == "tdcd" and result["dataset"] == "diabetes_sklearn"
    assert result["settings"]["silos"] == 3 and result["settings"]["clients_per_silo"] == 2
    assert len(result["history"]) == 7 and result["history"][-1]["objective"] < result["history"][0]["objective"]
    assert sum(result["bytes_by_purpose"].values()) == result["bytes"]
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("tdcd on diabetes_sklearn (seed 0, 3 silos x 2 clients, secure") and "test RMSE" in line


def test_one_client_per_silo_runs_from_the_command_line(tmp_path):
    # before, the horizontal methods' "at least 2 clients" rule refused Fig. 2c's K = 1 here
    code, result = _run(["--rounds", "2", "--clients", "1"], tmp_path / "r.json")

    assert code == 0 and result["settings"]["clients_per_silo"] == 1


def test_secure_and_plain_aggregation_give_the_same_objective(tmp_path):
    argv = ["--rounds", "4", "--lr", "0.05", "--eval-every", "2"]
    _, secure = _run(argv, tmp_path / "s.json")
    _, plain = _run([*argv, "--no-secure-agg"], tmp_path / "p.json")
    assert [h["round"] for h in secure["history"]] == [0, 2, 4]
    assert [h["objective"] for h in secure["history"]] == pytest.approx([h["objective"] for h in plain["history"]],
                                                                        rel=1e-5)
    assert plain["settings"]["aggregation"] == "plain" and secure["bytes"] > plain["bytes"]


def _table(folder, *, classify=False):
    """120 samples: an ID, four numeric features, and a numeric target or its sign as a class."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 4))
    y = x @ np.array([1.5, -2.0, 0.5, 1.0]) + 0.1 * rng.normal(size=120)
    frame = pd.DataFrame({"id": [f"s{i}" for i in range(120)], **{f"f{j}": x[:, j] for j in range(4)},
                          "y": np.where(y > 0, "up", "down") if classify else y})
    frame.to_csv(folder / "table.csv", index=False)
    return folder / "table.csv"


def test_a_csv_of_ones_own_regresses_and_classifies(tmp_path):
    # Arrange
    argv = ["--silos", "2", "--clients", "2", "--rounds", "20", "--lr", "0.1", "--batch-size", "10"]
    regression = _table(tmp_path)
    (tmp_path / "c").mkdir()
    classes = _table(tmp_path / "c", classify=True)
    # Act
    _, ridge = _run([*argv, "--csv", str(regression)], tmp_path / "r.json")
    _, softmax = _run([*argv, "--csv", str(classes), "--classes", "up,down"], tmp_path / "c.json")
    # Assert: the ID is no feature (two silos of two columns each) and both learn
    assert ridge["dataset"] == "table" and ridge["settings"]["columns"] == [[0, 2], [2, 4]]
    assert ridge["metrics"]["rmse"] < 0.5 * np.std(pd.read_csv(regression)["y"])
    assert softmax["settings"]["task"] == "classification" and softmax["metrics"]["accuracy"] > 0.8


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "breast"], "method 'tdcd' needs a TDCD dataset"),
    (["--csv", "missing.csv"], "--csv file missing.csv not found"),
    (["--csv", "t.csv", "--classes", "one"], "--classes must list two or more distinct class values"),
    (["--epochs", "3"], "--epochs applies to every method but tdcd"),
    (["--silos", "0"], "--silos must be at least 1"),
    (["--clients", "0"], "--clients must be at least 1, got 0"),
    (["--l2", "-1"], "--l2 must be >= 0"),
    (["--silos", "11"], "10 feature columns, too few for 11 silos"),
])
def test_bad_tdcd_arguments_are_one_line_errors(tmp_path, capsys, argv, message):
    out = tmp_path / "r.json"
    assert main(["run", "tdcd", *argv, "--no-progress", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.assign(f1=f.f1.astype(object).where(f.index != 4, "?")),
     "column 'f1' is not numeric ('?' in data row 5; encode it first or drop it)"),
    (lambda f: f.assign(f2=f.f2.where(f.index != 6)), "column 'f2' is empty in 1 rows (first: data row 7)"),
    (lambda f: f.assign(y=np.where(f.y > 0, "up", "down")),
     "column 'y' is not numeric ('up' in data row 1; a class label needs --classes"),
])
def test_a_bad_cell_in_a_tdcd_csv_is_named_with_its_row(tmp_path, capsys, edit, message):
    # Arrange
    path = _table(tmp_path)
    edit(pd.read_csv(path)).to_csv(path, index=False)
    # Act
    code = main(["run", "tdcd", "--csv", str(path), "--id-column", "id", "--label", "y", "--no-progress"])
    # Assert
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_a_tdcd_option_given_to_another_method_is_refused(capsys):
    assert main(["run", "gl", "--local-steps", "3", "--no-progress"]) == 2
    assert "--local-steps applies to tdcd" in capsys.readouterr().err
