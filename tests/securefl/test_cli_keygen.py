"""``securefl keygen`` and the --identity / --trust files of networked parties."""

import errno
import os
import stat

import pytest

from protocols.channels import crypto
from protocols.errors import InputError
from securefl.cli import main
from securefl.commands.keygen import read_private, read_trust


def test_keygen_writes_an_owner_only_private_key_and_its_public_key(tmp_path, capsys):
    key = tmp_path / "bank.key"

    assert main(["keygen", str(key)]) == 0

    public = (tmp_path / "bank.key.pub").read_text().strip()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert crypto.public_bytes(read_private(key)).hex() == public
    assert public in capsys.readouterr().out and key.read_text().strip() not in public


def test_keygen_never_overwrites_a_key(tmp_path, capsys):
    key = tmp_path / "bank.key"
    main(["keygen", str(key)])
    before = key.read_text()

    code = main(["keygen", str(key)])

    assert code == 2 and "exists; keygen never overwrites a key" in capsys.readouterr().err
    assert key.read_text() == before


@pytest.mark.parametrize("linked", ["bank.key", "bank.key.pub"])
def test_keygen_refuses_a_link_to_nowhere_where_it_would_write(tmp_path, capsys, linked):
    # Arrange: a dangling link, as someone who may write in the folder could plant
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    (tmp_path / linked).symlink_to(victim)
    # Act
    code = main(["keygen", str(tmp_path / "bank.key")])
    # Assert: one line, no key written anywhere
    assert code == 2 and "exists; keygen never overwrites a key" in capsys.readouterr().err
    assert not victim.exists() and not (tmp_path / "bank.key").is_file()


class _FullDisk:
    """A key file that takes 10 bytes, then fails as a full disk or a file-size limit does."""

    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, text):
        self.handle.write(text[:10])
        self.handle.flush()
        raise OSError(errno.EFBIG, "File too large")


@pytest.mark.parametrize("failing", ["bank.key", "bank.key.pub"])
def test_a_key_file_that_cannot_be_written_is_removed_and_named(tmp_path, monkeypatch, capsys, failing):
    # Arrange: writing `failing` fails part-way; the other file writes normally
    real_fdopen = os.fdopen
    target = tmp_path / failing

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        return _FullDisk(handle) if target.exists() and os.path.samestat(os.fstat(fd), target.stat()) else handle

    monkeypatch.setattr(os, "fdopen", fdopen)
    # Act
    code = main(["keygen", str(tmp_path / "bank.key")])
    # Assert: one line naming the file, nothing left behind, so a retry succeeds
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and f"{target}: cannot write the key (File too large)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert main(["keygen", str(tmp_path / "bank.key")]) == 0


def test_a_key_file_that_appears_meanwhile_is_left_alone(tmp_path, monkeypatch, capsys):
    # Arrange: the public key file is created by someone else between keygen's check and its write
    key, public = tmp_path / "bank.key", tmp_path / "bank.key.pub"
    real_open = os.open

    def open_(path, flags, *args):
        if str(path) == str(public):
            public.write_text("theirs\n")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_)
    # Act
    code = main(["keygen", str(key)])
    # Assert: their file kept as it was, the private key this call wrote removed
    assert code == 2 and f"{public} exists; keygen never overwrites a key" in capsys.readouterr().err
    assert public.read_text() == "theirs\n" and not key.exists()


def test_a_trust_file_pins_each_listed_peer(tmp_path):
    a, b = (crypto.public_bytes(crypto.new_private_key()) for _ in range(2))
    path = tmp_path / "trust.txt"
    path.write_text(f"# the other banks\nshop {a.hex()}\n\nlab {b.hex()}  # since May\n")

    assert read_trust(path, ["lab", "shop"]) == {"lab": b, "shop": a}


@pytest.mark.parametrize("text, message", [
    ("shop abc\n", "line 1: expected 'NAME PUBLIC_KEY_HEX'"),
    ("shop " + "zz" * 32 + "\n", "line 1: expected"),
    ("shop " + "ab" * 32 + "\nshop " + "cd" * 32 + "\n", "line 2: 'shop' is listed twice"),
    ("lab " + "ab" * 32 + "\n", "no key for 'shop'"),
])
def test_bad_trust_files_are_one_line_errors_naming_the_line(tmp_path, text, message):
    path = tmp_path / "trust.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_trust(path, ["shop"])


def test_a_private_key_others_may_read_is_refused(tmp_path):
    key = tmp_path / "bank.key"
    main(["keygen", str(key)])
    key.chmod(0o644)
    with pytest.raises(InputError, match="others may read or change this private key; chmod 600"):
        read_private(key)


def test_a_file_that_is_not_a_private_key_is_refused(tmp_path):
    path = tmp_path / "k"
    path.write_text("not a key\n")
    path.chmod(0o600)
    with pytest.raises(InputError, match="not a securefl private key"):
        read_private(path)


@pytest.mark.parametrize("argv, message", [
    (["--identity", "k"], "--identity needs --role"),
    (["--role", "active", "--peer", "127.0.0.1:1", "--identity", "k"], "--identity and --trust go together"),
    (["--role", "active", "--peer", "127.0.0.1:1", "--identity", "missing.key", "--trust", "t"],
     "--identity missing.key: file not found"),
])
def test_identity_options_are_checked_before_any_connection(tmp_path, monkeypatch, capsys, argv, message):
    # Arrange: a valid active party's file, so only the key options can fail
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.csv").write_text("id,y,x\n" + "".join(f"u{i},{i % 2},{i}\n" for i in range(20)))
    # Act
    code = main(["run", "stfl", "--party-csv", "a.csv", "--no-progress", *argv])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_psi_identity_needs_a_network_role(tmp_path, capsys):
    code = main(["psi", "a.csv", "b.csv", "--id-column", "id", "--out", str(tmp_path / "o"), "--identity", "k"])
    assert code == 2 and "--identity and --trust need --role" in capsys.readouterr().err
