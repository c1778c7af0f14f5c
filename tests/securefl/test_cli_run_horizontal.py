"""``securefl run`` for CHFL and GL: result files with the agreed fields, one-line errors for bad input."""

import json

import numpy as np
import pandas as pd
import pytest

from securefl.cli import main

FIELDS = ("method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings")


def _table(folder, *, clients=None):
    rng = np.random.default_rng(1)
    n = 240
    x = rng.normal(size=(n, 6))
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(6)])
    frame["y"] = (x[:, 0] + x[:, 3] + x[:, 5] > 0).astype(int)
    if clients:
        frame["site"] = [clients[i % len(clients)] for i in range(n)]
    path = folder / "table.csv"
    frame.to_csv(path, index=False)
    return path


def _run(argv, out):
    code = main(["run", *argv, "--no-progress", "--json", str(out)])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def test_chfl_on_a_csv_with_a_feature_spec_writes_the_agreed_fields(tmp_path, capsys):
    # Arrange
    table = _table(tmp_path)
    spec = "common=f0,f1;unique=f2,f3|f4,f5"
    # Act
    code, result = _run(["chfl", "--csv", str(table), "--label", "y", "--features", spec, "--rounds", "2",
                         "--seed", "2"], tmp_path / "chfl.json")
    # Assert
    assert code == 0
    assert all(f in result for f in FIELDS)
    assert result["method"] == "chfl" and result["seed"] == 2 and result["bytes"] > 0
    assert set(result["metrics"]["clients"]) == {"c0", "c1"}
    assert result["metrics"]["accuracy"] > 0.6  # chance is about 0.5
    assert "secure aggregation" in capsys.readouterr().out


def test_local_says_it_averages_nothing_and_sends_nothing(tmp_path, capsys):
    # Arrange
    table = _table(tmp_path)
    # Act
    code, result = _run(["local", "--csv", str(table), "--label", "y", "--clients", "2", "--rounds", "1"],
                        tmp_path / "local.json")
    # Assert
    assert code == 0 and result["bytes"] == 0
    assert "(seed 0, no aggregation)" in capsys.readouterr().out


def test_secure_and_plain_aggregation_give_the_same_chfl_result(tmp_path):
    # Arrange
    table = _table(tmp_path)
    argv = ["common", "--csv", str(table), "--label", "y", "--clients", "2", "--rounds", "2"]
    # Act
    _, secure = _run(argv, tmp_path / "secure.json")
    _, plain = _run([*argv, "--no-secure-agg"], tmp_path / "plain.json")
    # Assert: same accuracy per client; the masked protocol sends more bytes
    assert secure["metrics"]["clients"] == plain["metrics"]["clients"]
    assert secure["bytes"] > plain["bytes"]
    assert secure["settings"]["secure_agg"] is True and plain["settings"]["secure_agg"] is False


def test_chfl_with_a_learning_rate_grid_reports_each_clients_choice(tmp_path, capsys):
    # Arrange
    table = _table(tmp_path)
    # Act
    code, result = _run(["chfl", "--csv", str(table), "--label", "y", "--clients", "2", "--rounds", "2",
                         "--lrs", "0.01,0.001", "--no-secure-agg"], tmp_path / "tuned.json")
    # Assert: one run per rate, the grid in the settings, every client's rate one of the grid
    assert code == 0
    assert result["settings"]["lr"] == [0.001, 0.01] and [r["lr"] for r in result["runs"]] == [0.001, 0.01]
    assert set(result["chosen_lr"]) == {"c0", "c1"} <= set(result["metrics"]["clients"])
    assert set(result["chosen_lr"].values()) <= {0.001, 0.01}
    assert "lr per client: c0 " in capsys.readouterr().out


def test_chfl_takes_its_mu_grid_from_the_command_line(tmp_path):
    # Arrange
    table = _table(tmp_path)
    # Act
    code, result = _run(["chfl", "--csv", str(table), "--label", "y", "--clients", "2", "--rounds", "1",
                         "--mus", "1,0.25", "--no-secure-agg"], tmp_path / "mus.json")
    # Assert: the grid reaches the config (sorted), each client trains exactly it and picks from it
    assert code == 0 and result["settings"]["mus"] == [0.25, 1.0]
    for client in result["clients"]:
        assert set(client["history"]) == {"common", "chfl_mu=0", "chfl_mu=0.25", "chfl_mu=1"}
    picked = {s["variant"] for s in result["methods"]["chfl"]["selected"].values()}
    assert picked <= {"chfl_mu=0.25", "chfl_mu=1"}


def test_gl_on_a_csv_with_natural_clients(tmp_path):
    # Arrange
    table = _table(tmp_path, clients=["north", "south", "west"])
    # Act
    code, result = _run(["gl", "--csv", str(table), "--label", "y", "--client-column", "site", "--epochs", "2",
                         "--batches", "2"], tmp_path / "gl.json")
    # Assert: by default (Algorithm 1) the last epoch's average is not sent
    assert code == 0
    assert all(f in result for f in FIELDS)
    assert set(result["metrics"]["clients"]) == {"north", "south", "west"}
    assert result["rounds"] == 1 and result["bytes"] > 0 and result["settings"]["final_average"] is False


def test_chfl_on_a_csv_with_natural_clients_gives_each_its_other_columns(tmp_path):
    # Arrange: south has no f5 (empty in its rows), so its unique columns are f2-f4
    frame = pd.read_csv(_table(tmp_path, clients=["north", "south"]))
    frame.loc[frame.site == "south", "f5"] = None
    frame.to_csv(tmp_path / "sites.csv", index=False)
    # Act
    code, result = _run(["common", "--csv", str(tmp_path / "sites.csv"), "--label", "y", "--client-column", "site",
                         "--features", "common=f0,f1", "--rounds", "2"], tmp_path / "common.json")
    # Assert
    assert code == 0 and set(result["metrics"]["clients"]) == {"north", "south"}
    assert result["settings"]["unique_features"] == {"north": ["f2", "f3", "f4", "f5"], "south": ["f2", "f3", "f4"]}
    assert result["settings"]["common_features"] == ["f0", "f1"] and result["bytes"] > 0
    # CHFL's Local baseline on the same clients: the features name the CHFL family, so no GL model
    code, local = _run(["local", "--csv", str(tmp_path / "sites.csv"), "--label", "y", "--client-column", "site",
                        "--features", "common=f0,f1", "--rounds", "2"], tmp_path / "local.json")
    assert code == 0 and local["bytes"] == 0 and set(local["metrics"]["clients"]) == {"north", "south"}
    assert local["clients"][1]["unique_features"] == 3  # south: f2-f4


def test_a_csvs_file_name_does_not_pick_a_registered_datasets_settings(tmp_path):
    # Arrange: the same rows in a file called like the registered heart set
    table = _table(tmp_path, clients=["north", "south"])
    named = tmp_path / "gl_heart.csv"
    named.write_bytes(table.read_bytes())
    argv = ["--label", "y", "--client-column", "site", "--epochs", "1", "--batches", "1"]
    # Act
    _, plain = _run(["gl", "--csv", str(table), *argv], tmp_path / "a.json")
    _, heart = _run(["gl", "--csv", str(named), *argv], tmp_path / "b.json")
    # Assert: the same settings and widths, as each --role client with its own CSV gets
    assert heart["settings"] == plain["settings"] and heart["metrics"] == plain["metrics"]


def test_fedavg_federation_switches_reach_the_run(tmp_path):
    # Arrange
    table = _table(tmp_path, clients=["north", "south"])
    argv = ["fedavg", "--csv", str(table), "--label", "y", "--client-column", "site", "--epochs", "2",
            "--batches", "2", "--bn-stats", "local", "--final", "average"]
    # Act
    code, result = _run(argv, tmp_path / "fedavg.json")
    # Assert: statistics stayed home and the last round's average was sent for the clients to adopt
    assert code == 0
    assert result["settings"]["federate_bn_stats"] is False and result["settings"]["final_average"] is True
    assert result["rounds"] == 2


def test_eta_reaches_a_per_batch_gl_run(tmp_path):
    # Arrange
    table = _table(tmp_path, clients=["north", "south"])
    argv = ["gl", "--csv", str(table), "--label", "y", "--client-column", "site", "--epochs", "2",
            "--batches", "2", "--aggregate", "batch", "--eta", "0"]
    # Act
    code, result = _run(argv, tmp_path / "gl.json")
    # Assert: eta 0 uses every batch's average, the last one included
    assert code == 0 and result["settings"]["eta"] == 0.0 and result["rounds"] == 4


def test_eta_with_per_epoch_aggregation_is_a_one_line_error(tmp_path, capsys):
    # Arrange
    table = _table(tmp_path, clients=["north", "south"])
    # Act
    code = main(["run", "gl", "--csv", str(table), "--label", "y", "--client-column", "site", "--eta", "0.5",
                 "--no-progress", "--json", str(tmp_path / "gl.json")])
    # Assert
    err = capsys.readouterr().err
    assert code == 2 and "eta=0.5 would have no effect with aggregate='epoch'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "gl.json").exists()


@pytest.mark.parametrize("switch", ["bn_stats", "final"])
def test_help_names_the_default_that_glconfig_applies(switch):
    # Arrange: the run command leaves the switch unset, so GLConfig's default applies
    import argparse

    from securefl.algorithms.gl import switch_default
    from securefl.commands.run_horizontal import add_arguments
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    # Act
    action = next(a for a in parser._actions if a.dest == switch)
    # Assert
    assert action.default is None
    assert action.help.endswith(f"(default: {switch_default(switch)})")


def test_one_epoch_gl_run_says_that_nothing_was_federated(tmp_path, capsys):
    # Arrange
    table = _table(tmp_path, clients=["north", "south"])
    # Act
    code, result = _run(["gl", "--csv", str(table), "--label", "y", "--client-column", "site", "--epochs", "1",
                         "--batches", "2"], tmp_path / "gl.json")
    # Assert: no round was sent, and stderr says why and how to federate it
    assert code == 0 and result["rounds"] == 0
    assert "sends no round" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["gl", "--dataset", "digits"], "method 'gl' needs a GL dataset"),
    (["chfl", "--dataset", "breast_sklearn"], "method 'chfl' needs a CHFL dataset"),
    (["centralized", "--dataset", "digits"], "'centralized' runs on vertical datasets and gl_covertype"),
    (["chfl", "--clients", "1"], "--clients must be at least 2"),
    (["chfl", "--common-ratio", "1.5"], "--common-ratio must be between 0 and 1"),
    (["chfl", "--rounds", "0"], "--rounds must be at least 1"),
    (["gl", "--csv", "t.csv", "--label", "y", "--client-column", "site", "--epochs", "2", "--rounds", "5"],
     "--epochs 2 and --rounds 5 disagree; give one"),
    (["gl", "--dataset", "gl_heart", "--csv", "t.csv", "--client-column", "site"],
     "--csv and --dataset gl_heart both name the data; give one"),
    (["stfl", "--dataset", "breast_sklearn", "--csv", "t.csv"], "--csv and --dataset breast_sklearn both name"),
    (["chfl", "--lrs", "0.001,0"], "--lrs must list distinct positive learning rates"),
    (["chfl", "--lrs", "fast"], "--lrs must list distinct positive learning rates"),
    (["chfl", "--mus", "0.5,1.5"], "--mus must list distinct values in (0, 1]"),
    (["chfl", "--mus", "0,0.5"], "--mus must list distinct values in (0, 1]"),
    (["common", "--mus", "0.5"], "--mus applies to chfl"),
    (["gl", "--lrs", "0.001"], "--lrs applies to the CHFL family (chfl, common, simple, local) on CHFL data"),
    (["stfl", "--lrs", "0.001"], "--lrs applies to the CHFL family"),
    (["local", "--dataset", "gl_heart", "--lrs", "0.001"], "--lrs applies to the CHFL family"),
    (["chfl", "--classes", "a,b"],
     "--classes applies to chfl, common, simple and fedavg with --role, and tdcd with --role or --csv"),
    (["chfl", "--csv", "t.csv", "--client-column", "site"], "needs the common columns: --features 'common=COL,COL'"),
    (["simple", "--csv", "t.csv", "--client-column", "site", "--features", "common=a;unique=b|c"],
     "with --client-column each client's unique features are its own other columns"),
])
def test_bad_horizontal_arguments_are_one_line_errors(capsys, argv, message):
    code = main(["run", *argv, "--no-progress"])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_csv_without_the_label_or_client_column_names_it(tmp_path, capsys):
    table = _table(tmp_path, clients=["a", "b"])

    assert main(["run", "chfl", "--csv", str(table), "--label", "nope", "--no-progress"]) == 2
    assert "'nope'" in capsys.readouterr().err
    assert main(["run", "gl", "--csv", str(table), "--label", "y", "--client-column", "region",
                 "--no-progress"]) == 2
    assert "--client-column" in capsys.readouterr().err
