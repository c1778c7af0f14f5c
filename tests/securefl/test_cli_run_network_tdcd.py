"""``securefl run tdcd --role``: each hub and client its own process and CSV, equal to one process."""

import argparse
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from protocols.errors import InputError
from protocols.transport.torchdist import free_port
from securefl.algorithms.tdcd import TDCDConfig
from protocols.transport import run_parties
from securefl.algorithms.tdcd_hub import run_tdcd
from securefl.algorithms.tdcd_network import client_party, hub_party
from securefl.cli import main
from securefl.commands.run_network_tdcd import _line
from securefl.data.tdcd_clients import load_client_csv, natural_split

SETTINGS = ["--rounds", "3", "--local-steps", "2", "--batch-size", "8", "--lr", "0.05", "--seed", "1", "--no-progress"]
SILOS = "bank=branch;shop=store"


def _client_files(folder, *, classify=False):
    """A bank branch holds three columns of 60 samples, a shop store two others, in another order, both
    with the target ``y``: a number, or with ``classify`` its sign as a class, low or high."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 5))
    y = x @ rng.normal(size=5)
    y = np.where(y > 0, "high", "low") if classify else y
    ids = np.array([f"c{i:02d}" for i in range(60)])
    order = rng.permutation(60)
    pd.DataFrame({"id": ids, "a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "y": y}).to_csv(folder / "branch.csv",
                                                                                        index=False)
    pd.DataFrame({"id": ids[order], "d": x[order, 3], "e": x[order, 4], "y": y[order]}).to_csv(folder / "store.csv",
                                                                                              index=False)


def _networked_roles(rows, config, n_classes=0):
    """The networked setup's roles, every party in this process."""
    hubs = {"bank": {"silo": 0, "clients": ["branch"], "hubs": ["bank", "shop"], "config": config},
            "shop": {"silo": 1, "clients": ["store"], "hubs": ["bank", "shop"], "config": config}}
    clients = {n: {"hub": h, "silo": j, "last": j == 1, "rows": rows[n], "clients": 1, "config": config}
               for j, (n, h) in enumerate((("branch", "bank"), ("store", "shop")))}
    kwargs = {k: {**v, "n_classes": n_classes} for k, v in {**hubs, **clients}.items()}
    return run_parties({"bank": hub_party, "shop": hub_party, "branch": client_party, "store": client_party},
                       kwargs=kwargs)


def test_the_networked_setup_regresses_as_the_one_process_run(tmp_path):
    # Arrange
    _client_files(tmp_path)
    rows = {n: load_client_csv(tmp_path / f"{n}.csv", name=n, id_column="id", label="y") for n in ("branch", "store")}
    config = TDCDConfig(rounds=3, local_steps=2, batch_size=8, lr=0.05, seed=1)
    # Act
    want = run_tdcd(natural_split([("bank", [rows["branch"]]), ("shop", [rows["store"]])], seed=1), config)
    got = _networked_roles(rows, config)
    # Assert
    for hub in ("bank", "shop"):
        assert [h["objective"] for h in got.results[hub]["history"]] == pytest.approx(
            [h["objective"] for h in want["history"]], rel=1e-6)


@pytest.mark.parametrize("argv, message", [
    (["--role", "bank", "--peer", "127.0.0.1:1"], "needs --parties 'HUB=CLIENT"),
    (["--role", "bank", "--parties", "bank,shop", "--peer", "127.0.0.1:1"], "--parties for tdcd is 'HUB=CLIENT"),
    (["--role", "x", "--parties", SILOS, "--peer", "127.0.0.1:1"], "--role 'x' is neither a hub"),
    (["--role", "bank", "--parties", "bank=a,b;shop=c", "--peer", "127.0.0.1:1"],
     "every silo needs the same number of clients (the minibatch is --batch-size per client), got [2, 1]"),
    (["--role", "bank", "--parties", SILOS, "--peer", "127.0.0.1:1", "--csv", "a.csv"], "hub 'bank' holds no data"),
    (["--role", "branch", "--parties", SILOS, "--peer", "127.0.0.1:1"], "client 'branch' needs its own rows"),
    (["--role", "branch", "--parties", SILOS, "--peer", "127.0.0.1:1", "--csv", "a.csv", "--silos", "3"],
     "--silos applies to tdcd without --role"),
    (["--csv", "a.csv", "--dataset", "tdcd_pol"], "--csv and --dataset tdcd_pol both name the data; give one"),
    (["--role", "bank", "--parties", SILOS, "--peer", "127.0.0.1:1", "--classes", "yes"],
     "--classes must list two or more distinct class values"),
    (["--classes", "no,yes"],
     "--classes applies to chfl, common, simple and fedavg with --role, and tdcd with --role or --csv"),
])
def test_bad_network_arguments_are_one_line_errors(capsys, argv, message):
    assert main(["run", "tdcd", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_hubs_and_clients_on_their_own_classify_as_the_one_process_run(tmp_path):
    # Arrange: the reference, every silo in one process from the same files (its setup messages too)
    _client_files(tmp_path, classify=True)
    rows = {n: load_client_csv(tmp_path / f"{n}.csv", name=n, id_column="id", label="y", classes=("high", "low"))
            for n in ("branch", "store")}
    config = TDCDConfig(rounds=3, local_steps=2, batch_size=8, lr=0.05, seed=1)
    want = run_tdcd(natural_split([("bank", [rows["branch"]]), ("shop", [rows["store"]])], seed=1, n_classes=2),
                    config)
    inprocess = _networked_roles(rows, config, n_classes=2)
    # Act: each party its own process
    procs, outs = _each_party_alone(tmp_path, "--classes", "low,high")
    # Assert
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outs]
    got = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in ("bank", "shop", "branch", "store")}
    assert want["settings"]["task"] == "classification" and want["metrics"]["accuracy"] > 0.6
    for hub in ("bank", "shop"):
        assert [h["objective"] for h in got[hub]["history"]] == pytest.approx(
            [h["objective"] for h in want["history"]], rel=1e-6)
        assert got[hub]["metrics"]["accuracy"] == pytest.approx(want["metrics"]["accuracy"])
        assert got[hub]["settings"]["classes"] == ["high", "low"]
    assert got["bank"]["settings"]["hub_exchange"] == "clear"  # two silos: the other's Phi is the others' sum
    assert got["branch"]["metrics"] == {} and got["branch"]["train_rows"] == want["settings"]["n_train"]
    assert sum(r["bytes_sent"] for r in got.values()) == inprocess.bytes
    assert outs[0][0].startswith("tdcd hub 'bank'") and "test accuracy" in outs[0][0]
    assert outs[2][0].startswith("tdcd client 'branch'")


def _each_party_alone(folder, *options):
    """Run bank, shop, branch and store each in its own process on the files in ``folder``; the
    processes (in that order) and their (stdout, stderr)."""
    net = [sys.executable, "-m", "securefl", "run", "tdcd", *SETTINGS, "--parties", SILOS, *options,
           "--peer", f"127.0.0.1:{free_port()}", "--timeout", "120"]
    data = ["--id-column", "id", "--label", "y"]
    procs = [subprocess.Popen([*net, "--role", role, *extra, "--json", str(folder / f"{role}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for role, extra in [("bank", []), ("shop", []), ("branch", ["--csv", str(folder / "branch.csv"), *data]),
                                 ("store", ["--csv", str(folder / "store.csv"), *data])]]
    return procs, [p.communicate(timeout=240) for p in procs]


def test_silos_with_another_label_for_a_sample_stop_every_party_with_one_line(tmp_path):
    # Arrange: the store's target differs from the branch's for one sample
    _client_files(tmp_path)
    store = pd.read_csv(tmp_path / "store.csv")
    store.loc[3, "y"] += 1.0
    store.to_csv(tmp_path / "store.csv", index=False)
    # Act
    procs, outs = _each_party_alone(tmp_path)
    # Assert: protocol-error status and one line each; no process aborts in gloo on its way out
    assert [p.returncode for p in procs] == [3, 3, 3, 3], [o[1] for o in outs]
    errors = [err.strip().splitlines() for _, err in outs]
    assert all(len(lines) == 1 for lines in errors), errors
    assert "silos 'bank' and 'shop' hold different labels for the same samples" in errors[0][0]
    assert "silos 'shop' and 'bank' hold different labels" in errors[1][0]
    assert not any((tmp_path / f"{r}.json").exists() for r in ("bank", "shop", "branch", "store"))


def test_a_label_outside_the_classes_stops_the_client_in_one_line(tmp_path):
    _client_files(tmp_path, classify=True)

    with pytest.raises(InputError, match="client 'branch' has class 'low', which is not among"):
        load_client_csv(tmp_path / "branch.csv", name="branch", id_column="id", label="y", classes=("high", "mid"))


def test_a_hubs_line_gives_rmse_for_regression_and_accuracy_for_classes():
    args = argparse.Namespace(role="bank", seed=3)
    base = {"role": "hub", "seconds": 1.0, "bytes_sent": 10, "bytes_received": 20,
            "history": [{"objective": 2.0}, {"objective": 1.0}]}

    regression = _line(args, {**base, "metrics": {"rmse": 0.5}})
    classes = _line(args, {**base, "metrics": {"accuracy": 0.875}})

    assert "test RMSE 0.5 |" in regression and "test accuracy 0.8750 |" in classes
