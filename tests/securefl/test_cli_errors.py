"""How ``securefl`` turns each kind of failure into one stderr line and an exit status."""

from __future__ import annotations

import argparse

import pytest

import securefl.cli as cli
from protocols.errors import CryptoError, DecodeError, InputError, PeerTimeoutError
from protocols.lifecycle import Terminated


def _parser_whose_command_raises(error: BaseException):
    """A ``build_parser`` stand-in with one command, ``boom``, whose handler raises ``error``."""
    def build() -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="securefl")
        sub = parser.add_subparsers(dest="command", required=True)

        def handler(_args: argparse.Namespace) -> int:
            raise error

        sub.add_parser("boom").set_defaults(handler=handler)
        return parser
    return build


@pytest.mark.parametrize(("error", "code", "line"), [
    (InputError("column 'age' is missing\n(more detail)"), cli.EXIT_USAGE,
     "securefl boom: error: column 'age' is missing"),
    (DecodeError("message 7: bad frame"), cli.EXIT_PROTOCOL, "securefl boom: protocol error: message 7: bad frame"),
    # a TimeoutError, so an OSError too: it must still read as a protocol error
    (PeerTimeoutError("lab", "psi/1", 30.0), cli.EXIT_PROTOCOL,
     "securefl boom: protocol error: no message from party 'lab' with tag psi/1 within 30 s"),
    (CryptoError("authentication failed"), cli.EXIT_PROTOCOL,
     "securefl boom: authentication error: authentication failed"),
    (FileNotFoundError(2, "No such file or directory", "ids.csv"), cli.EXIT_USAGE,
     "securefl boom: error: ids.csv: No such file or directory"),
    (OSError(28, "No space left on device"), cli.EXIT_USAGE, "securefl boom: error: No space left on device"),
    (KeyboardInterrupt(), 130, "securefl boom: interrupted"),
    (Terminated(), 143, "securefl boom: terminated (SIGTERM)"),
])
def test_each_failure_kind_is_one_line_with_its_exit_status(monkeypatch, capsys, error, code, line):
    # Arrange
    monkeypatch.setattr(cli, "build_parser", _parser_whose_command_raises(error))

    # Act
    status = cli.main(["boom"])

    # Assert
    assert status == code
    assert capsys.readouterr().err == line + "\n"


def test_an_error_without_text_is_named_by_its_type(monkeypatch, capsys):
    # Arrange
    monkeypatch.setattr(cli, "build_parser", _parser_whose_command_raises(InputError()))

    # Act
    status = cli.main(["boom"])

    # Assert
    assert status == cli.EXIT_USAGE and capsys.readouterr().err == "securefl boom: error: InputError\n"


def test_a_bug_is_not_dressed_up_as_a_user_error(monkeypatch):
    # Arrange: an exception that is not the toolkit's own must keep its traceback
    monkeypatch.setattr(cli, "build_parser", _parser_whose_command_raises(ZeroDivisionError("bug")))

    # Act / Assert
    with pytest.raises(ZeroDivisionError):
        cli.main(["boom"])


def test_a_reader_that_leaves_early_ends_the_command_quietly():
    # Arrange: the pipe's reading end is closed before the command writes a line (as `| head` does)
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "securefl.cli", "datasets", "--details"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()

    # Act
    _, err = proc.communicate(timeout=120)

    # Assert: the shell's status for a process a pipe ended, and no traceback or error line
    assert proc.returncode == cli.EXIT_BROKEN_PIPE
    assert err == b""
