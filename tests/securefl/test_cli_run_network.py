"""``securefl run METHOD --role``: one party per process with only its own CSV, equal to the simulation."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from protocols.errors import InputError
from protocols.transport.torchdist import free_port
from securefl.cli import main

SETTINGS = ["--epochs", "20", "--lr", "0.01", "--seed", "4", "--no-progress"]
STFL = ["stfl", *SETTINGS, "--latent-seed", "1"]  # the passive parties' latent draws repeat
RUN = [sys.executable, "-m", "securefl", "run", *STFL]


def _party_files(folder, passive=1, n=400):
    """An active file (labels, two features; ``n`` rows) and ``passive`` passive files whose IDs partly
    overlap it."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, 2 + 2 * passive))
    ids = np.array([f"u{i}" for i in range(n)])
    y = (x[:, 0] + x[:, 2] > 0).astype(int)
    pd.DataFrame({"id": ids, "y": y, "a0": x[:, 0], "a1": x[:, 1]}).to_csv(folder / "active.csv", index=False)
    files = [folder / "active.csv"]
    for k in range(passive):
        keep = rng.permutation(n)[: n - 40 * (k + 1)]  # each lacks some rows; row order shuffled
        frame = pd.DataFrame({"id": ids[keep], "p0": x[keep, 2 + 2 * k], "p1": x[keep, 3 + 2 * k]})
        frame.to_csv(folder / f"passive{k + 1}.csv", index=False)
        files.append(folder / f"passive{k + 1}.csv")
    return files


def _start(argv, files, names, folder, port):
    """One process per party, each given only its own file; the active party first."""
    procs = []
    for path, name in zip(files, names):
        cmd = [sys.executable, "-m", "securefl", "run", *argv, "--party-csv", str(path),
               "--role", name, "--parties", ",".join(names), "--peer", f"127.0.0.1:{port}", "--timeout", "120",
               "--json", str(folder / f"{name}.json")]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True))
    return procs


@pytest.mark.multiprocess
@pytest.mark.parametrize("method_args, passive", [
    # --latent-seed: the passive parties' latent draws repeat
    (["stfl", "--latent-seed", "1"], 1),
    (["stfl", "--latent-seed", "1"], 2),
    # exact fixed point: the masks cancel exactly; --passive-seed, --share-seed: the initial weights repeat
    (["he-vfl", "--he", "paillier", "--epochs", "1", "--passive-seed", "2", "--share-seed", "3"], 1),
    (["he-vfl", "--he", "paillier", "--epochs", "1", "--all-data", "--passive-seed", "2", "--share-seed", "3"], 1),
], ids=["stfl", "stfl-3-parties", "he-vfl", "he-vfl-all-data"])
def test_one_party_per_process_gives_the_simulations_result(tmp_path, method_args, passive):
    # Arrange: the same files and seed, once with every file here (three parties: under the names the
    # networked run gives them, since STFL seeds a passive party by its name)
    files = _party_files(tmp_path, passive, n=400 if method_args[0] == "stfl" else 200)  # Paillier: per row
    names = ["active", "passive"] if passive == 1 else ["hospital", "lab", "bank"]
    local, argv = tmp_path / "local.json", [method_args[0], *SETTINGS, *method_args[1:]]
    named = [] if passive == 1 else ["--parties", ",".join(names)]
    assert main(["run", *argv, "--party-csv", *map(str, files), *named, "--json", str(local)]) == 0
    # Act: each party alone in its own process, over torch.distributed
    procs = _start(argv, files, names, tmp_path, free_port())
    outs = [p.communicate(timeout=180) for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [0] * len(procs), [o[1] for o in outs]
    want = json.loads(local.read_text())
    got = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in names}
    active = got[names[0]]
    assert active["metrics"] == want["metrics"]
    assert active["bytes"] == sum(got[n]["bytes_sent"] for n in names)  # the hub of every exchange
    if method_args[0] == "stfl":
        assert active["bytes"] == want["bytes"]
    else:  # Paillier ciphertexts are big integers whose encoded length varies by a byte or so
        assert abs(active["bytes"] - want["bytes"]) < 1e-3 * want["bytes"]
    assert active["settings"]["all_data"] == ("--all-data" in method_args)
    for name in names[1:]:
        assert got[name]["role"] == "passive" and got[name]["metrics"] == {}
        assert got[name]["intersection_size"] == want["intersection_size"]
    assert "accuracy" in outs[0][0] and "common rows" in outs[1][0]


def _trusting_keys(folder):
    """Keys for the active and passive parties, each trusting the other's: their --identity/--trust options."""
    for name in ("active", "passive"):
        assert main(["keygen", str(folder / f"{name}.key")]) == 0
    for name, other in (("active", "passive"), ("passive", "active")):
        (folder / f"{name}.trust").write_text(f"{other} {(folder / f'{other}.key.pub').read_text().strip()}\n")
    return {n: ["--identity", str(folder / f"{n}.key"), "--trust", str(folder / f"{n}.trust")]
            for n in ("active", "passive")}


@pytest.mark.multiprocess
def test_parties_with_identity_keys_run_over_authenticated_links_to_the_same_result(tmp_path):
    # Arrange: each party makes its key and trusts the other's public key
    files = _party_files(tmp_path)
    keys = _trusting_keys(tmp_path)
    local = tmp_path / "local.json"
    assert main(["run", *STFL, "--party-csv", *map(str, files), "--json", str(local)]) == 0
    # Act
    port = free_port()
    procs = [subprocess.Popen([*RUN, "--party-csv", str(path), "--role", name, "--peer", f"127.0.0.1:{port}",
                               *keys[name], "--json", str(tmp_path / f"{name}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for name, path in zip(("active", "passive"), files)]
    outs = [p.communicate(timeout=180) for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    got = json.loads((tmp_path / "active.json").read_text())
    assert got["metrics"] == json.loads(local.read_text())["metrics"]
    assert got["settings"]["authenticated_links"] is True


def _wait_for_listener(port):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail("the active party never listened")


def _interrupt_active(active, passive, port):
    """Once both parties have had 8 s to meet, Ctrl-C the active one: its stderr and how long it took to end."""
    try:
        _wait_for_listener(port)
        time.sleep(8)
        stopped = time.monotonic()
        os.killpg(active.pid, signal.SIGINT)
        err = active.communicate(timeout=30)[1]
        return err, time.monotonic() - stopped
    finally:
        for proc in (active, passive):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()


@pytest.mark.multiprocess
def test_ctrl_c_to_the_active_party_while_a_passive_one_pretrains_ends_it_at_once(tmp_path):
    # Arrange: a passive party whose VAE pretraining would take minutes
    files = _party_files(tmp_path)
    port = free_port()
    cmd = [*RUN, "--vae-epochs", "1000000", "--peer", f"127.0.0.1:{port}", "--timeout", "120"]
    active = subprocess.Popen([*cmd, "--party-csv", str(files[0]), "--role", "active"], stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    passive = subprocess.Popen([*cmd, "--party-csv", str(files[1]), "--role", "passive"], stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    # Act: both joined, PSI done: the active party waits for latents
    err, took = _interrupt_active(active, passive, port)
    # Assert: one line, at once, not after the passive party's pretraining
    assert active.returncode == 130 and err.strip().splitlines() == ["securefl run: interrupted"], err
    assert took < 15


@pytest.mark.multiprocess
def test_every_stfl_and_he_vfl_setting_but_the_machines_own_must_agree():
    from baselines.he_vfl import HEVFLConfig
    from securefl.algorithms.stfl import STFLConfig
    from securefl.commands.run_network import vertical_agreed

    # a passive party's seed, learning rate or latents change the active party's result
    assert vertical_agreed(STFLConfig(seed=2)) != vertical_agreed(STFLConfig(seed=9))
    assert vertical_agreed(STFLConfig(latent="mean")) != vertical_agreed(STFLConfig())
    assert vertical_agreed(HEVFLConfig(lr=0.1)) != vertical_agreed(HEVFLConfig())
    # where and how fast a machine computes, and how long it waits, are its own
    assert vertical_agreed(STFLConfig(threads=1, timeout=5.0)) == vertical_agreed(STFLConfig())
    assert vertical_agreed(HEVFLConfig(workers=1)) == vertical_agreed(HEVFLConfig())


@pytest.mark.multiprocess
def test_stfl_parties_started_with_different_seeds_stop_with_the_difference(tmp_path):
    # Arrange: a passive party's seed draws its VAE, so the active party's result would change silently
    files = _party_files(tmp_path)
    port = free_port()
    base = [sys.executable, "-m", "securefl", "run", "stfl", "--peer", f"127.0.0.1:{port}", "--timeout", "60",
            "--no-progress", "--epochs", "1"]
    # Act
    procs = [subprocess.Popen([*base, "--party-csv", str(path), "--role", role, "--seed", seed],
                              stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
             for path, role, seed in ((files[0], "active", "2"), (files[1], "passive", "9"))]
    errs = [p.communicate(timeout=60)[1].strip().splitlines() for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [3, 3], errs
    assert all(len(e) == 1 and "seed=" in e[0] for e in errs), errs


def test_parties_started_for_different_methods_both_stop_with_the_difference(tmp_path):
    # Arrange: an STFL active party and an HE-VFL passive party would otherwise wait on each other for an hour
    files = _party_files(tmp_path)
    port = free_port()
    base = [sys.executable, "-m", "securefl", "run", "--peer", f"127.0.0.1:{port}", "--timeout", "60",
            "--no-progress"]
    # Act
    procs = [subprocess.Popen([*base, method, "--party-csv", str(path), "--role", role], stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, text=True, start_new_session=True)
             for method, path, role in (("stfl", files[0], "active"), ("he-vfl", files[1], "passive"))]
    errs = [p.communicate(timeout=60)[1].strip().splitlines() for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [3, 3], errs
    assert len(errs[0]) == 1 and "the party joined as 'passive' was started with command='run he-vfl'" in errs[0][0]
    assert len(errs[1]) == 1 and "the party joined as 'active' was started with command='run stfl'" in errs[1][0]


def test_a_passive_file_with_the_label_column_is_refused_before_any_connection(tmp_path, capsys):
    files = _party_files(tmp_path)
    code = main(["run", "stfl", "--party-csv", str(files[0]), "--role", "passive", "--peer", "127.0.0.1:1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "active.csv: passive party 'passive' has the label column 'y'" in err


@pytest.mark.parametrize("argv, message", [
    (["--party-csv", "A", "--role", "active"], "--role needs --peer HOST:PORT"),
    (["--party-csv", "A", "B", "--role", "active", "--peer", "h:1"], "give this party's one CSV"),
    (["--dataset", "breast", "--role", "active", "--peer", "h:1"], "give this party's one CSV"),
    (["--party-csv", "A", "--role", "bank", "--peer", "h:1"], "--role 'bank' is not in --parties (active,passive)"),
    (["--party-csv", "A", "--role", "a", "--parties", "a,a", "--peer", "h:1"], "distinct, non-empty names"),
    (["--party-csv", "A", "--role", "a", "--parties", "a,", "--peer", "h:1"], "distinct, non-empty names"),
    (["--party-csv", "A", "--role", "a", "--parties", "a", "--peer", "h:1"], "two or more names"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:1", "--backend", "torch"], "--backend applies"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:1", "--timeout", "nan"], "--timeout must be"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:99999"], "invalid port"),
    (["--party-csv", "A", "B", "--peer", "h:1"], "--peer needs --role"),
    (["--party-csv", "A", "B", "--parties", "x,y,z"], "--parties names 3 parties for 2 --party-csv files"),
    (["--party-csv", "A", "B", "--parties", "x,x"], "distinct, non-empty names"),
    (["--dataset", "breast", "--parties", "x,y"], "--parties needs --role"),
])
def test_bad_network_arguments_are_one_line_errors(tmp_path, capsys, argv, message):
    files = _party_files(tmp_path)
    argv = [{"A": str(files[0]), "B": str(files[1])}.get(a, a) for a in argv]
    code = main(["run", "stfl", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("argv, message", [
    (["centralized", "--party-csv", "x.csv"], "--role runs one party of stfl, he-vfl, gl, fedavg, chfl, common,"
                                              " simple, tdcd; 'centralized' runs only"),
    (["he-vfl", "--party-csv", "x.csv", "--parties", "a,b,c", "--role", "a"], "he-vfl has exactly one passive"),
])
def test_role_is_for_the_protocol_methods_with_their_party_counts(capsys, argv, message):
    code = main(["run", *argv, "--peer", "h:1", *([] if "--role" in argv else ["--role", "active"])])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


def _site_files(folder):
    """One CSV of two natural clients (site column) and each client's own file of its rows."""
    rng = np.random.default_rng(5)
    frames = []
    for k, site in enumerate(["north", "south"]):
        x = rng.normal(size=(120 + 40 * k, 3)) + 0.001  # floats in every column, in every file
        label = np.where(x[:, 0] + 0.5 * x[:, 1] > 0, "yes", "no")
        frames.append(pd.DataFrame({"site": site, "f1": x[:, 0], "f2": x[:, 1], "f3": x[:, 2], "y": label}))
    every = pd.concat(frames, ignore_index=True)
    every.to_csv(folder / "sites.csv", index=False)
    for site, rows in every.groupby("site"):
        rows.drop(columns="site").to_csv(folder / f"{site}.csv", index=False)
    return folder / "sites.csv"


@pytest.mark.multiprocess
@pytest.mark.parametrize("method, schema", [
    ("gl", []),
    ("fedavg", ["--columns", "f1,f2,f3", "--classes", "no,yes"]),  # the whole model: every party gets the schema
])
def test_gl_server_and_clients_on_their_own_give_each_client_the_simulations_result(tmp_path, method, schema):
    # Arrange
    every = _site_files(tmp_path)
    settings = ["--epochs", "3", "--batches", "2", "--seed", "2", "--no-progress"]
    local = tmp_path / "local.json"
    assert main(["run", method, "--csv", str(every), "--label", "y", "--client-column", "site", *settings,
                 "--json", str(local)]) == 0
    # Act: the server, then each client with only its own rows
    port = free_port()
    net = [sys.executable, "-m", "securefl", "run", method, *settings, *schema, "--parties", "north,south",
           "--peer", f"127.0.0.1:{port}", "--timeout", "120"]
    procs = [subprocess.Popen([*net, "--role", role, *extra, "--json", str(tmp_path / f"{role}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for role, extra in [("server", []), ("north", ["--csv", str(tmp_path / "north.csv"), "--label", "y"]),
                                 ("south", ["--csv", str(tmp_path / "south.csv"), "--label", "y"])]]
    outs = [p.communicate(timeout=180) for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1] for o in outs]
    want = json.loads(local.read_text())
    got = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in ("server", "north", "south")}
    for client in ("north", "south"):
        mine = {k: v for k, v in got[client]["metrics"].items() if k != "per_class"}
        assert mine == {k: v for k, v in want["metrics"]["clients"][client].items() if k in mine}
    assert got["server"]["metrics"] == {} and got["server"]["rounds"] == 2
    assert sum(r["bytes_sent"] for r in got.values()) == want["bytes"]
    assert "masked sums only" in outs[0][0] and f"{method} client 'north'" in outs[1][0]


@pytest.mark.parametrize("argv, message", [
    (["--role", "server"], "gl with --role needs --parties naming its clients"),
    (["--role", "server", "--parties", "a"], "two or more clients"),
    (["--role", "server", "--parties", "a,server"], "'server' is the server's own name"),
    (["--role", "c", "--parties", "a,b", "--csv", "x.csv"], "--role 'c' is neither 'server' nor a client"),
    (["--role", "a", "--parties", "a,b"], "client 'a' needs its own data: --csv FILE --label COL"),
    (["--role", "server", "--parties", "a,b", "--csv", "x.csv"], "the 'server' holds no data"),
    (["--role", "a", "--parties", "a,b", "--csv", "x.csv", "--client-column", "s"], "--client-column splits"),
    (["--role", "server", "--parties", "a,b", "--epochs", "1"], "averages nothing"),
    (["--role", "a", "--parties", "a,b", "--csv", "missing.csv"], "--csv file missing.csv not found"),
    (["--role", "server", "--parties", "a,b", "--columns", "x"], "--columns applies to fedavg with --role"),
])
def test_bad_gl_network_arguments_are_one_line_errors(capsys, argv, message):
    code = main(["run", "gl", "--peer", "127.0.0.1:1", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("argv, message", [
    (["--role", "server", "--parties", "a,b"], "fedavg with --role needs the federation's schema"),
    (["--role", "server", "--parties", "a,b", "--columns", "x,x", "--classes", "n,y"], "--columns must list distinct"),
    (["--role", "server", "--parties", "a,b", "--columns", "x", "--classes", "n"], "--classes must list two or more"),
])
def test_bad_fedavg_network_arguments_are_one_line_errors(capsys, argv, message):
    code = main(["run", "fedavg", "--peer", "127.0.0.1:1", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_fedavg_orders_numeric_classes_by_value_as_the_one_machine_run_does():
    from securefl.commands.run_network_horizontal import fedavg_class_order

    assert fedavg_class_order(("10", "2", "1")) == ("1", "2", "10")
    assert fedavg_class_order(("b", "10", "a")) == ("10", "a", "b")


def test_a_fedavg_client_off_the_schema_stops_in_one_line(tmp_path):
    from baselines.gl_baselines import schema_client
    from securefl.data.gl_csv import load_client_csv
    from securefl.data.gl_sets import split_client

    _site_files(tmp_path)
    table = split_client(load_client_csv(tmp_path / "north.csv", label="y", name="north"), 0)

    with pytest.raises(InputError, match="column 'f3' is not among the federation's --columns f1,f2"):
        schema_client(table, columns=("f1", "f2"), classes=("no", "yes"))
    with pytest.raises(InputError, match="client 'north' has class 'yes', which is not among"):
        schema_client(table, columns=("f1", "f2", "f3"), classes=("maybe", "no"))


def test_the_server_name_is_the_algorithms():
    from securefl.algorithms.chfl import SERVER as CHFL_SERVER
    from securefl.algorithms.gl import SERVER
    from securefl.commands.run_network_horizontal import SERVER as CLI_SERVER

    assert CLI_SERVER == SERVER == CHFL_SERVER


def _chfl_sites(folder):
    """Two sites sharing c1, c2, each with unique columns of its own (empty in the other's rows), in one
    CSV, and each site's own file of its rows and columns."""
    rng = np.random.default_rng(5)
    frames = []
    for k, site in enumerate(["north", "south"]):
        x = rng.normal(size=(100 + 30 * k, 4)) + 0.001
        label = np.where(x[:, 0] + x[:, 2] > 0, "yes", "no")
        frames.append(pd.DataFrame({"site": site, "c1": x[:, 0], "c2": x[:, 1], f"u_{site}": x[:, 2],
                                    f"v_{site}": x[:, 3], "y": label}))
    every = pd.concat(frames, ignore_index=True)
    every.to_csv(folder / "sites.csv", index=False)
    for site, rows in every.groupby("site"):
        rows.drop(columns="site").dropna(axis=1, how="all").to_csv(folder / f"{site}.csv", index=False)
    return folder / "sites.csv"


def _chfl_parties(folder, port, settings, schema):
    """The CHFL server and the two sites' clients, each its own process; schema: per role, its schema options."""
    net = [sys.executable, "-m", "securefl", "run", "chfl", *settings, "--parties", "north,south",
           "--peer", f"127.0.0.1:{port}", "--timeout", "60"]
    return [subprocess.Popen([*net, "--role", role, *schema[role], *extra, "--json", str(folder / f"{role}.json")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
            for role, extra in [("server", []), ("north", ["--csv", str(folder / "north.csv"), "--label", "y"]),
                                ("south", ["--csv", str(folder / "south.csv"), "--label", "y"])]]


@pytest.mark.multiprocess
def test_chfl_server_and_clients_on_their_own_give_each_client_the_simulations_result(tmp_path):
    # Arrange
    every = _chfl_sites(tmp_path)
    settings = ["--rounds", "3", "--seed", "2", "--no-progress"]
    schema = ["--features", "common=c1,c2", "--classes", "yes,no"]
    local = tmp_path / "local.json"
    assert main(["run", "chfl", "--csv", str(every), "--label", "y", "--client-column", "site",
                 "--features", "common=c1,c2", *settings, "--json", str(local)]) == 0
    # Act
    procs = _chfl_parties(tmp_path, free_port(), settings, {r: schema for r in ("server", "north", "south")})
    outs = [p.communicate(timeout=180) for p in procs]
    # Assert: every method's accuracy per client, and every byte
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1] for o in outs]
    want = json.loads(local.read_text())
    got = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in ("server", "north", "south")}
    for client in ("north", "south"):
        assert got[client]["metrics"]["methods"] == {m: v["clients"][client] for m, v in want["methods"].items()}
        assert got[client]["metrics"]["accuracy"] == want["metrics"]["clients"][client]
    assert got["server"]["metrics"] == {} and got["server"]["rounds"] == 3
    assert sum(r["bytes_sent"] for r in got.values()) == want["bytes"]
    assert "masked sums only" in outs[0][0] and "chfl client 'south'" in outs[2][0]


@pytest.mark.multiprocess
def test_chfl_parties_with_different_classes_all_stop_with_the_difference(tmp_path):
    # Arrange
    _chfl_sites(tmp_path)
    schema = ["--features", "common=c1,c2", "--classes"]
    # Act
    classes = {"server": "yes,no", "north": "yes,no", "south": "yes,no,maybe"}
    procs = _chfl_parties(tmp_path, free_port(), ["--rounds", "1", "--no-progress"],
                          {role: [*schema, value] for role, value in classes.items()})
    errs = [p.communicate(timeout=60)[1].strip().splitlines() for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [3, 3, 3], errs
    assert all(len(e) == 1 and "classes=" in e[0] for e in errs), errs
    assert "the party joined as 'south' was started with classes=['maybe', 'no', 'yes']" in errs[0][0]


@pytest.mark.parametrize("argv, message", [
    (["--role", "server", "--parties", "a,b"], "chfl with --role needs the federation's schema on every party"),
    (["--role", "server", "--parties", "a,b", "--features", "common=x"], "the server too: --features"),
    (["--role", "server", "--parties", "a,b", "--features", "common=x", "--classes", "p,q", "--lrs", "0.1,0.2"],
     "--lrs runs one federation per rate"),
    (["--role", "server", "--parties", "a,b", "--features", "common=x;unique=y|z", "--classes", "p,q"],
     "with --role each client's unique features are its own other columns"),
    (["--role", "server", "--parties", "a,b", "--features", "common=x", "--classes", "p"],
     "--classes must list two or more"),
    (["--role", "a", "--parties", "a,b", "--features", "common=x", "--classes", "p,q", "--csv", "missing.csv"],
     "--csv file missing.csv not found"),
    (["--role", "a", "--parties", "a,b"], "client 'a' needs its own data"),
])
def test_bad_chfl_network_arguments_are_one_line_errors(capsys, argv, message):
    code = main(["run", "chfl", "--peer", "127.0.0.1:1", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_party_on_a_gpu_records_the_peak_memory_of_its_own_process(tmp_path, monkeypatch, fake_gpu):
    # Arrange: a GPU seen through faked counters, and a transport that needs no peer
    import argparse
    import types

    from protocols.transport import torchdist
    from securefl.commands.run_network import finish, run_as

    class NoPeer:
        def __init__(self, *args, **kwargs):
            self.meter = types.SimpleNamespace(bytes_sent=0, bytes_received=0)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(torchdist, "TorchDistTransport", NoPeer)
    args = argparse.Namespace(peer="127.0.0.1:29500", role="a", method="stfl", device="cuda", timeout=5.0,
                              identity=None, trust=None, json=tmp_path / "a.json")
    # Act
    result, _, _, peak = run_as(args, ("a", "b"), lambda transport: {"done": True}, {}, wait=1.0, agree={})
    code = finish(args, {"party": "a"}, "a finished", peak)
    # Assert: the party's --json holds its own process's peak
    assert code == 0 and result == {"done": True}
    assert json.loads((tmp_path / "a.json").read_text()) == {"party": "a", "gpu_peak_mib": fake_gpu}


_SILENT_PEER = """
import sys, time
from protocols.transport.torchdist import TorchDistTransport
TorchDistTransport._handshakes = lambda self, identity, trusted: time.sleep(120)  # joins, then never answers
from securefl.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.multiprocess
def test_ctrl_c_while_a_peer_never_answers_the_link_handshake_ends_the_party_at_once(tmp_path):
    # Arrange: authenticated links; the passive party joins the rendezvous, then never sends its handshake
    files = _party_files(tmp_path)
    keys = _trusting_keys(tmp_path)
    port = free_port()
    argv = ["run", "stfl", *SETTINGS, "--peer", f"127.0.0.1:{port}", "--timeout", "120"]
    active = subprocess.Popen([sys.executable, "-m", "securefl", *argv, "--party-csv", str(files[0]), "--role",
                               "active", *keys["active"]], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              text=True, start_new_session=True)
    passive = subprocess.Popen([sys.executable, "-c", _SILENT_PEER, *argv, "--party-csv", str(files[1]), "--role",
                                "passive", *keys["passive"]], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               start_new_session=True)
    # Act: both joined: the active party waits for the passive one's handshake
    err, took = _interrupt_active(active, passive, port)
    # Assert: one line and status 130, at once, though a thread still waits on the peer in gloo
    assert active.returncode == 130 and err.strip().splitlines() == ["securefl run: interrupted"], err
    assert took < 15


def test_gl_clients_must_share_the_learning_rate_that_moves_every_clients_average():
    from securefl.algorithms.gl import paper_config
    from securefl.commands.run_network_horizontal import _gl_agreed

    assert _gl_agreed(paper_config("csv", lr=0.05)) != _gl_agreed(paper_config("csv"))
    assert _gl_agreed(paper_config("csv", select="val_loss")) == _gl_agreed(paper_config("csv"))  # its own eval
