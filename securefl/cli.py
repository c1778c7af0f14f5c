"""The ``securefl`` command line: one sub-command per module in :mod:`securefl.commands`.

Every error a user can cause ends in one line on stderr naming the file, column or
parameter, and exit status 2; nothing half-written is left behind.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from protocols.errors import CryptoError, ProtocolError, SecureFLError
from protocols.lifecycle import exit_status, interrupted_status, stopped_by, terminate_like_interrupt

EXIT_USAGE = 2
EXIT_PROTOCOL = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`


def build_parser() -> argparse.ArgumentParser:
    from securefl import __version__
    from securefl.commands import datasets, demo, keygen, psi, run

    parser = argparse.ArgumentParser(
        prog="securefl", description="Secure federated learning across organisations.")
    parser.add_argument("--version", action="version", version=f"securefl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    datasets.add_parser(sub)
    demo.add_parser(sub)
    keygen.add_parser(sub)
    psi.add_parser(sub)
    run.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command; return the exit status (or exit with it at once
    when a failed networked run left receivers blocked on its peers: :func:`protocols.lifecycle.exit_status`)."""
    with terminate_like_interrupt():  # `kill PID` cleans up as Ctrl-C does: pools shut down, staging removed
        status = _run(argv)
    return exit_status(status)


def _run(argv: Sequence[str] | None) -> int:
    # torch's C++ side logs a failed rendezvous as pages of stack frames before the Python
    # error we turn into one line; it reads this once, when torch loads (set it to see them)
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    try:
        from securefl.runtime.reproducible import reproducible_blas  # imports torch: inside the Ctrl-C guard

        reproducible_blas()  # before any matrix product: MKL reads it once
        parser = build_parser()  # imports torch and the commands: a second or two
    except KeyboardInterrupt as exc:
        print(f"securefl: {stopped_by(exc)}", file=sys.stderr)
        return interrupted_status(exc)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except ProtocolError as exc:
        print(f"securefl {args.command}: protocol error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_PROTOCOL
    except CryptoError as exc:  # a peer's message or link failed authentication
        print(f"securefl {args.command}: authentication error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_PROTOCOL
    except SecureFLError as exc:
        print(f"securefl {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""  # none when e.g. stdout is a full disk
        print(f"securefl {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print(f"securefl {args.command}: {stopped_by(exc)}", file=sys.stderr)
        return interrupted_status(exc)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
