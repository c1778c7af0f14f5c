"""``securefl run stfl|he-vfl --role``: one party per process with only its own CSV, equal to the simulation."""

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

from protocols.transport.torchdist import free_port
from securefl.cli import main

SETTINGS = ["--epochs", "20", "--lr", "0.01", "--seed", "4", "--no-progress"]
RUN = [sys.executable, "-m", "securefl", "run", "stfl", *SETTINGS]


def _party_files(folder, passive=1):
    """An active file (labels, two features) and ``passive`` passive files whose IDs partly overlap it."""
    rng = np.random.default_rng(1)
    n = 400
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
    (["stfl"], 1),
    (["stfl"], 2),
    (["he-vfl", "--he", "paillier", "--epochs", "2"], 1),  # exact fixed point: the masks cancel exactly
    (["he-vfl", "--he", "paillier", "--epochs", "2", "--all-data"], 1),
], ids=["stfl", "stfl-3-parties", "he-vfl", "he-vfl-all-data"])
def test_one_party_per_process_gives_the_simulations_result(tmp_path, method_args, passive):
    # Arrange: the same files and seed, once with every file here (the names it defaults to)
    files = _party_files(tmp_path, passive)
    names = ["active", "passive"] if passive == 1 else ["active", "passive1", "passive2"]
    local, argv = tmp_path / "local.json", [method_args[0], *SETTINGS, *method_args[1:]]
    assert main(["run", *argv, "--party-csv", *map(str, files), "--json", str(local)]) == 0
    # Act: each party alone in its own process, over torch.distributed
    procs = _start(argv, files, names, tmp_path, free_port())
    outs = [p.communicate(timeout=180) for p in procs]
    # Assert
    assert [p.returncode for p in procs] == [0] * len(procs), [o[1] for o in outs]
    want = json.loads(local.read_text())
    got = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in names}
    assert got["active"]["metrics"] == want["metrics"]
    assert got["active"]["bytes"] == sum(got[n]["bytes_sent"] for n in names)  # the hub of every exchange
    if method_args[0] == "stfl":
        assert got["active"]["bytes"] == want["bytes"]
    else:  # Paillier ciphertexts are big integers whose encoded length varies by a byte or so
        assert abs(got["active"]["bytes"] - want["bytes"]) < 1e-3 * want["bytes"]
    assert got["active"]["settings"]["all_data"] == ("--all-data" in method_args)
    for name in names[1:]:
        assert got[name]["role"] == "passive" and got[name]["metrics"] == {}
        assert got[name]["intersection_size"] == want["intersection_size"]
    assert "accuracy" in outs[0][0] and "common rows" in outs[1][0]


def _wait_for_listener(port):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail("the active party never listened")


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
    try:
        _wait_for_listener(port)
        time.sleep(8)  # both joined, PSI done: the active party waits for latents
        # Act
        stopped = time.monotonic()
        os.killpg(active.pid, signal.SIGINT)
        err = active.communicate(timeout=30)[1]
        took = time.monotonic() - stopped
    finally:
        for proc in (active, passive):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    # Assert: one line, at once, not after the passive party's pretraining
    assert active.returncode == 130 and err.strip().splitlines() == ["securefl run: interrupted"], err
    assert took < 15


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
    (["--party-csv", "A", "--role", "a", "--parties", "a,a", "--peer", "h:1"], "two or more distinct"),
    (["--party-csv", "A", "--role", "a", "--parties", "a,", "--peer", "h:1"], "two or more distinct"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:1", "--backend", "torch"], "--backend applies"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:1", "--timeout", "nan"], "--timeout must be"),
    (["--party-csv", "A", "--role", "active", "--peer", "h:99999"], "invalid port"),
    (["--party-csv", "A", "B", "--peer", "h:1"], "--peer needs --role"),
    (["--party-csv", "A", "B", "--parties", "x,y"], "--parties needs --role"),
])
def test_bad_network_arguments_are_one_line_errors(tmp_path, capsys, argv, message):
    files = _party_files(tmp_path)
    argv = [{"A": str(files[0]), "B": str(files[1])}.get(a, a) for a in argv]
    code = main(["run", "stfl", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


@pytest.mark.parametrize("argv, message", [
    (["centralized", "--party-csv", "x.csv"], "--role runs one party of stfl or he-vfl; 'centralized' runs only"),
    (["he-vfl", "--party-csv", "x.csv", "--parties", "a,b,c", "--role", "a"], "he-vfl has exactly one passive"),
])
def test_role_is_for_the_protocol_methods_with_their_party_counts(capsys, argv, message):
    code = main(["run", *argv, "--peer", "h:1", *([] if "--role" in argv else ["--role", "active"])])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
