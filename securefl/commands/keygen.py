"""``securefl keygen FILE``: an identity key for authenticated links, and reading keys back.

A networked party (``securefl psi --role``, ``securefl run ... --role``) given
``--identity FILE --trust FILE`` authenticates and encrypts its links to every other
party (:mod:`protocols.transport.links`). ``keygen`` writes the private key to FILE
(hex, readable by its owner only) and the public key to FILE.pub; the parties swap
public keys out of band and list them in a trust file, one ``NAME PUBLIC_KEY_HEX``
line per other party (``#`` starts a comment).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from protocols.channels import crypto
from protocols.errors import InputError
from securefl.commands import plain_text

KEY_HEX = 2 * crypto.KEY_BYTES


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("keygen", help="make an identity key for authenticated network links",
                              description=plain_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path, help="where the private key goes (FILE.pub gets the public key)")
    p.set_defaults(handler=run)


def add_arguments(group: Any) -> None:
    """``--identity`` and ``--trust`` for a command with ``--role``."""
    group.add_argument("--identity", type=Path, metavar="FILE",
                       help="with --role: this party's private key (securefl keygen); needs --trust")
    group.add_argument("--trust", type=Path, metavar="FILE",
                       help="with --role: 'NAME PUBLIC_KEY_HEX' lines, one per other party; links to them are"
                            " then authenticated and encrypted")


def run(args: argparse.Namespace) -> int:
    path, public_path = Path(args.file), Path(f"{args.file}.pub")
    for target in (path, public_path):
        if os.path.lexists(target):  # a link too, even one to nowhere: keygen would write where it points
            raise InputError(f"{target} exists; keygen never overwrites a key")
    if not path.parent.is_dir():
        raise InputError(f"{path}: {path.parent} is not a folder")
    key = crypto.new_private_key()
    _write_new(path, crypto.private_bytes(key).hex() + "\n", 0o600)
    public = crypto.public_bytes(key).hex()
    try:
        _write_new(public_path, public + "\n", 0o644)
    except BaseException:  # nothing half-written: no private key without its public one
        _remove(path)
        raise
    print(f"private key: {path} (keep it; owner-only) | public key: {public} (also in {public_path})")
    return 0


def _write_new(path: Path, text: str, mode: int) -> None:
    """Create ``path`` (never over a file or link already there) holding ``text``. On any failure the
    file this call created is removed, so a retry is not refused by a partial key; the error names it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    except FileExistsError:  # appeared since the check: someone else's file, left alone
        raise InputError(f"{path} exists; keygen never overwrites a key") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot create the key file ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    except BaseException as exc:
        _remove(path)
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write the key ({exc.strerror or exc}); no key was kept") from None
        raise


def _remove(path: Path) -> None:
    """Remove a key file this call created; a failure to remove must not hide the error that led here."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def load_identity(args: argparse.Namespace, peers: Sequence[str]) -> tuple[Any, dict[str, bytes] | None]:
    """(private key, peer -> public key) from ``--identity``/``--trust``, or (None, None) without them."""
    if (args.identity is None) != (args.trust is None):
        raise InputError("--identity and --trust go together (give both or neither)")
    if args.identity is None:
        return None, None
    return read_private(args.identity), read_trust(args.trust, peers)


def read_private(path: Path) -> Any:
    """The X25519 private key in ``path`` (as ``keygen`` writes it); like ssh, refused if
    others may read the file."""
    text = _read(path, "--identity").strip()
    if os.name == "posix" and os.stat(path).st_mode & 0o077:
        raise InputError(f"--identity {path}: others may read or change this private key; chmod 600 {path}")
    if len(text) != KEY_HEX or not _is_hex(text):
        raise InputError(f"--identity {path}: not a securefl private key ({KEY_HEX} hex digits; see securefl keygen)")
    return crypto.load_private(bytes.fromhex(text))


def read_trust(path: Path, peers: Sequence[str]) -> dict[str, bytes]:
    """Each peer's pinned public key from ``path``; every peer must be listed, once."""
    trusted: dict[str, bytes] = {}
    for number, raw in enumerate(_read(path, "--trust").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[1]) != KEY_HEX or not _is_hex(parts[1]):
            raise InputError(f"--trust {path} line {number}: expected 'NAME PUBLIC_KEY_HEX' ({KEY_HEX} hex digits)")
        if parts[0] in trusted:
            raise InputError(f"--trust {path} line {number}: {parts[0]!r} is listed twice")
        trusted[parts[0]] = bytes.fromhex(parts[1])
    missing = [p for p in peers if p not in trusted]
    if missing:
        raise InputError(f"--trust {path}: no key for {', '.join(map(repr, missing))}")
    return {p: trusted[p] for p in peers}


def transport_keys(identity: Any, trusted: Mapping[str, bytes] | None) -> dict[str, Any]:
    """The TorchDistTransport keyword arguments for them (none without an identity)."""
    return {} if identity is None else {"identity": identity, "trusted": dict(trusted or {})}


def _read(path: Path, option: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise InputError(f"{option} {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{option} {path}: cannot read it ({exc.__class__.__name__})") from None


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


__all__ = ["add_arguments", "add_parser", "load_identity", "read_private", "read_trust", "transport_keys"]
