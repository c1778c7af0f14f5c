"""``securefl psi``: aligned outputs, JSON fields, and one-line errors with nothing half-written."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from protocols.transport.torchdist import free_port
from securefl.cli import main


def _write(path, ids, extra="x"):
    pd.DataFrame({"id": ids, extra: [f"{extra}{i}" for i in range(len(ids))]}).to_csv(path, index=False)
    return path


@pytest.fixture
def two_parties(tmp_path):
    left = _write(tmp_path / "left.csv", ["a", "b", "c", "007", " d", "NA"], "x")
    right = _write(tmp_path / "right.csv", ["NA", "7", "c", "a", "e", "d"], "y")
    return left, right


def test_local_psi_writes_rows_in_one_order_and_json(tmp_path, two_parties, capsys):
    left, right = two_parties
    out, report = tmp_path / "out", tmp_path / "psi.json"

    code = main(["psi", str(left), str(right), "--id-column", "id", "--out", str(out), "--json", str(report)])

    assert code == 0
    got_l = pd.read_csv(out / "left.csv", dtype=str, keep_default_na=False)
    got_r = pd.read_csv(out / "right.csv", dtype=str, keep_default_na=False)
    assert got_l["id"].tolist() == got_r["id"].tolist()
    assert sorted(got_l["id"]) == ["NA", "a", "c"]  # exact strings: "007" != "7", " d" != "d"
    assert set(got_l.columns) == {"id", "x"} and set(got_r.columns) == {"id", "y"}
    summary = json.loads(report.read_text())
    assert summary["intersection_size"] == 3 and summary["bytes"] > 0 and summary["seconds"] > 0
    assert "intersection: 3 rows" in capsys.readouterr().out


def _bad_file(kind, folder):
    path = folder / f"{kind}.csv"
    if kind == "missing":
        return path
    if kind == "no_id_column":
        pd.DataFrame({"key": ["a"]}).to_csv(path, index=False)
    elif kind == "duplicates":
        _write(path, ["a", "b", "a", "b", "c"])
    elif kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(b"id\n\xff\xfe\x00\x81\n")
    elif kind == "empty_id":
        path.write_text("id,x\na,1\n,2\n")
    elif kind == "trailing_comma":
        path.write_text("id,x\na,1,\nc,2,\n")
    return path


@pytest.mark.parametrize("kind, message", [
    ("missing", "missing.csv: file not found"),
    ("no_id_column", "no column 'id'"),
    ("duplicates", "duplicate"),
    ("empty", "empty"),
    ("binary", "cannot read CSV"),
    ("empty_id", "empty_id.csv: column 'id' has 1 empty or blank ID cell(s) (first in data row 2)"),
    ("trailing_comma", "trailing_comma.csv: data rows hold more fields than the header names"),
])
def test_bad_input_gives_one_line_error_and_writes_nothing(tmp_path, two_parties, capsys, kind, message):
    left, _ = two_parties
    bad = _bad_file(kind, tmp_path)
    out = tmp_path / "out"

    code = main(["psi", str(left), str(bad), "--id-column", "id", "--out", str(out)])

    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--role", "server", "--peer", "localhost:99999"], "invalid port"),
    (["--role", "client", "--peer", "localhost"], "HOST:PORT"),
    (["--role", "client"], "--role needs --peer"),
    (["--role", "client", "--peer", "localhost:5000", "--timeout", "inf"], "--timeout must be a positive number"),
    (["--role", "client", "--peer", "localhost:5000", "--timeout", "nan"], "--timeout must be a positive number"),
])
def test_bad_network_arguments_are_one_line_errors(tmp_path, two_parties, capsys, argv, message):
    left, _ = two_parties

    code = main(["psi", str(left), "--id-column", "id", "--out", str(tmp_path / "o"), *argv])

    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


def _keys(folder):
    """Each role's --identity and --trust options, each trusting the other's public key."""
    for role in ("server", "client"):
        assert main(["keygen", str(folder / f"{role}.key")]) == 0
    options = {}
    for role, other in (("server", "client"), ("client", "server")):
        (folder / f"{role}.trust").write_text(f"{other} {(folder / f'{other}.key.pub').read_text()}")
        options[role] = ["--identity", str(folder / f"{role}.key"), "--trust", str(folder / f"{role}.trust")]
    return options


@pytest.mark.multiprocess
@pytest.mark.parametrize("keys", [False, True], ids=["plain", "authenticated"])
def test_network_psi_runs_each_party_in_its_own_process(tmp_path, two_parties, keys):
    left, right = two_parties
    port = free_port()
    cmd = [sys.executable, "-m", "securefl", "psi", "--id-column", "id", "--out", str(tmp_path / "net"),
           "--peer", f"127.0.0.1:{port}", "--timeout", "60"]
    extra = _keys(tmp_path) if keys else {"server": [], "client": []}

    server = subprocess.Popen([*cmd, str(left), "--role", "server", "--json", str(tmp_path / "s.json"),
                               *extra["server"]])
    client = subprocess.run([*cmd, str(right), "--role", "client", *extra["client"]], timeout=120)
    server.wait(timeout=60)

    assert server.returncode == 0 and client.returncode == 0
    got_s = pd.read_csv(tmp_path / "net" / "server.csv", dtype=str, keep_default_na=False)
    got_c = pd.read_csv(tmp_path / "net" / "client.csv", dtype=str, keep_default_na=False)
    assert got_s["id"].tolist() == got_c["id"].tolist() and sorted(got_s["id"]) == ["NA", "a", "c"]
    report = json.loads((tmp_path / "s.json").read_text())
    assert report["intersection_size"] == 3 and report["authenticated_links"] is keys


@pytest.mark.multiprocess
@pytest.mark.parametrize("role", ["server", "client"])
def test_a_peer_that_never_joins_is_one_line_and_writes_nothing(tmp_path, two_parties, role):
    # Arrange: nobody else uses this port
    left, _ = two_parties
    port = free_port()
    cmd = [sys.executable, "-m", "securefl", "psi", str(left), "--id-column", "id", "--out", str(tmp_path / "net"),
           "--peer", f"127.0.0.1:{port}", "--timeout", "1", "--role", role]
    # Act: a fresh process, as a user runs it (torch's C++ logging included)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    # Assert
    err = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(err) == 1, done.stderr
    assert f"party '{role}': rendezvous at 127.0.0.1:{port} failed" in err[0] and "allow more than 1 s" in err[0]
    assert not (tmp_path / "net").exists()


@pytest.mark.multiprocess
def test_ctrl_c_while_the_server_waits_for_its_peer_is_answered_at_once(tmp_path, two_parties):
    import os
    import signal
    import socket
    import time

    # Arrange: a server whose peer never comes, allowed to wait a minute
    left, _ = two_parties
    port = free_port()
    cmd = [sys.executable, "-m", "securefl", "psi", str(left), "--id-column", "id", "--out", str(tmp_path / "net"),
           "--peer", f"127.0.0.1:{port}", "--timeout", "60", "--role", "server"]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for _ in range(600):  # until its rendezvous store listens: it is waiting for the peer
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    time.sleep(0.5)
    # Act: Ctrl-C long before the minute is up
    os.killpg(proc.pid, signal.SIGINT)
    try:
        err = proc.communicate(timeout=20)[1].decode()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the waiting server did not answer Ctrl-C within 20 s")
    # Assert
    assert proc.returncode == 130 and err.strip().splitlines() == ["securefl psi: interrupted"]


def test_a_folder_in_the_way_of_one_output_leaves_the_others_untouched(tmp_path, two_parties, capsys):
    # Arrange: out/right.csv is a folder, out/left.csv an earlier result
    left, right = two_parties
    out = tmp_path / "out"
    (out / "right.csv").mkdir(parents=True)
    (out / "left.csv").write_text("earlier\n")
    # Act
    code = main(["psi", str(left), str(right), "--id-column", "id", "--out", str(out)])
    # Assert: one line naming the user's path, and nothing replaced
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and f"{out / 'right.csv'}: a folder is in the way" in err
    assert (out / "left.csv").read_text() == "earlier\n"


def test_the_identity_key_given_as_an_input_table_is_refused(tmp_path, two_parties, capsys, monkeypatch):
    # Arrange
    monkeypatch.chdir(tmp_path)
    assert main(["keygen", "k1"]) == 0
    capsys.readouterr()
    argv = ["psi", "k1", "--role", "server", "--peer", "127.0.0.1:1", "--id-column", "id", "--out", "out",
            "--identity", "k1", "--trust", "right.csv"]
    # Act
    code = main(argv)
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--identity k1 is also given as input k1" in err


def test_one_table_on_both_sides_is_a_valid_psi(tmp_path, two_parties, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["psi", "left.csv", "left.csv", "--id-column", "id", "--out", "out"]) == 0


@pytest.mark.parametrize("out, json_name, message", [
    (".", None, "--out left.csv would replace input"),
    ("out", "left.csv", "--json left.csv would replace input"),
    ("out", "out/right.csv", "would replace --out out/right.csv"),
])
def test_an_output_that_would_replace_an_input_or_another_output_is_refused(tmp_path, two_parties, capsys,
                                                                             monkeypatch, out, json_name, message):
    # Arrange
    monkeypatch.chdir(tmp_path)
    before = {p: p.read_bytes() for p in two_parties}
    argv = ["psi", "left.csv", "right.csv", "--id-column", "id", "--out", out]
    # Act
    code = main([*argv, *(["--json", json_name] if json_name else [])])
    # Assert: one line, and the inputs are as they were
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err
    assert {p: p.read_bytes() for p in two_parties} == before
