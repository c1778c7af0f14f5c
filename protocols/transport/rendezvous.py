"""The torch.distributed rendezvous: its address (``HOST:PORT``, a free port), reaching rank 0's
store, waiting for every party, and checking that all were started alike, each wait a short call
in a Python loop.

torch's own waits for peers (in ``TCPStore``) hold the GIL, so Ctrl-C would go
unanswered until they time out; here it is answered between tries and polls.
"""

from __future__ import annotations

import datetime as _dt
import errno
import functools
import ipaddress
import json
import re
import socket
import time
from typing import Any

import torch.distributed as dist

from protocols.errors import InputError, ProtocolError
from protocols.transport.watch import Stranded, run_beside

_ARRIVED = "securefl/arrived"  # rendezvous counter: each party adds 1 once its store is up
_WHO = "securefl/who"  # + "/<rank>": what that party was started with (see check_agreement)
_CHECKED = "securefl/checked"  # counter: parties that have compared every announcement with their own
_LINGER_ON_MISMATCH = 3.0  # seconds rank 0 keeps the store up for the others to read a mismatch
_CONNECT_TRY = 1.0  # seconds of one attempt to reach the rendezvous store
_POLL = 0.1  # seconds between looks at the rendezvous counter


def connect(host: str, port: int, parties: int, is_master: bool, deadline: float) -> Any:
    """The rendezvous store: rank 0 serves it at once; the others try to reach it one
    second at a time (Ctrl-C is answered between tries) until ``deadline``."""
    if is_master:
        # TCPStore listens on every interface whatever ``host`` says; a loopback run hands it a
        # socket of its own on that address, so no other machine reaches the unauthenticated store
        listen = _loopback_socket(host, port)
        extra = {} if listen is None else {"master_listen_fd": listen, "use_libuv": False}
        return dist.TCPStore(host, port, parties, is_master=True, wait_for_workers=False,
                             timeout=_dt.timedelta(seconds=max(deadline - time.monotonic(), 1.0)), **extra)
    while True:
        left = deadline - time.monotonic()
        try:
            store = _reach(host, port, parties, min(max(left, 0.1), _CONNECT_TRY), deadline)
        except RuntimeError as exc:
            if "timed out" not in str(exc):
                raise  # not a peer that is late (e.g. a host that does not resolve): say so now
            if left <= _CONNECT_TRY:
                raise TimeoutError("timed out: no party listens there") from None
            continue
        store.set_timeout(_dt.timedelta(seconds=max(left, 1.0)))
        return store


def _reach(host: str, port: int, parties: int, attempt: float, deadline: float) -> Any:
    """One try to reach rank 0's store, in a helper thread: torch's client waits for the store's
    first answer without a timeout, so an address where something listens but never answers (a
    stopped party, another program) would hold the caller forever, deaf to Ctrl-C. Past ``deadline``
    the helper is left blocked (the process is marked to end with ``os._exit``) and TimeoutError
    says why; torch releases the GIL while it waits, so this thread keeps answering meanwhile."""
    def late() -> BaseException | None:
        return None if time.monotonic() < deadline else TimeoutError(
            f"timed out: something listens at {host}:{port} but does not answer as a rendezvous store"
            " (a stopped party, or another program)")

    call = functools.partial(dist.TCPStore, host, port, parties, is_master=False,
                             timeout=_dt.timedelta(seconds=attempt))
    try:
        return run_beside(call, f"rendezvous-{host}:{port}", gone=late)
    except Stranded as stuck:
        raise stuck.reason from None


def _loopback_socket(host: str, port: int) -> int | None:
    """A listening socket's file descriptor on ``host``:``port`` when ``host`` is a loopback
    address (the store then owns it), else None. A busy port is torch's EADDRINUSE error."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name: resolved by torch, listened for on every interface as before
        return None
    if not address.is_loopback:
        return None
    sock = socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except OSError as exc:  # as RuntimeError, torch's kind, so the caller's one-line report takes it
        sock.close()
        raise RuntimeError(f"{'EADDRINUSE: ' if exc.errno == errno.EADDRINUSE else ''}{exc.strerror}") from None
    return sock.detach()


def announce(store: Any, rank: int, mine: dict[str, Any]) -> None:
    """Put what this party was started with where the others compare it (before it counts in)."""
    store.set(f"{_WHO}/{rank}", json.dumps(mine, sort_keys=True))


def await_parties(store: Any, parties: int, deadline: float) -> None:
    """Count this party in and wait, in short sleeps, until every party has."""
    arrived = store.add(_ARRIVED, 1)
    while arrived < parties:
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for the other parties: {arrived}/{parties} joined")
        time.sleep(_POLL)
        arrived = store.add(_ARRIVED, 0)


def check_agreement(store: Any, name: str, parties: tuple[str, ...], mine: dict[str, Any], *,
                     serving: bool) -> None:
    """ProtocolError unless every party announced the same party list and settings as this one.

    The store lives in the ``serving`` party (rank 0), so on a mismatch it waits (briefly)
    for every party to have read the announcements before it raises and ends."""
    problem = _disagreement(store, name, parties, mine)
    checked = store.add(_CHECKED, 1)
    if problem is None:
        return
    deadline = time.monotonic() + _LINGER_ON_MISMATCH
    while serving and checked < len(parties) and time.monotonic() < deadline:
        time.sleep(_POLL)
        checked = store.add(_CHECKED, 0)
    raise ProtocolError(problem)


def _disagreement(store: Any, name: str, parties: tuple[str, ...], mine: dict[str, Any]) -> str | None:
    """Why the announcements differ from ``mine``, or None."""
    want = json.loads(json.dumps(mine, sort_keys=True))
    for rank, party in enumerate(parties):
        key = f"{_WHO}/{rank}"
        if not store.check([key]):
            return (f"party {name!r}: no party joined as {party!r} (two parties may have been given the same"
                    " name, or the parties were listed in different orders)")
        try:
            theirs = json.loads(store.get(key).decode())
        except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: JSON nested past Python's limit
            return f"party {name!r}: the party joined as {party!r} sent an unreadable announcement"
        if theirs == want:
            continue
        if not isinstance(theirs, dict):
            return f"party {name!r}: the party joined as {party!r} sent an unreadable announcement"
        keys = sorted(k for k in set(want) | set(theirs) if theirs.get(k) != want.get(k))
        if "command" in keys:  # another method: its settings differ as a matter of course
            keys = ["command"]
        return (f"party {name!r}: the party joined as {party!r} was started with"
                f" {', '.join(f'{k}={theirs.get(k)!r}' for k in keys)}; this party with"
                f" {', '.join(f'{k}={want.get(k)!r}' for k in keys)}. Start every party with the same")
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port), with a one-line error for anything else."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise InputError(f"address {text!r} is not HOST:PORT")
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise InputError(f"invalid port {port_text!r} in {text!r}: must be an integer in 1-65535")
    bracketed = host.startswith("[") and host.endswith("]")
    name = host[1:-1] if bracketed else host
    if not name or "[" in name or "]" in name:  # e.g. "[::1]:80:1", "[]:80"
        raise InputError(f"address {text!r} is not HOST:PORT (an IPv6 host goes in brackets: [::1]:29500)")
    return name, int(port_text)


def gloo_reason(exc: BaseException) -> str:
    """The gist of a gloo error: its first sentence, without the source location in front."""
    lines = str(exc).strip().splitlines()
    text = re.sub(r"^\[[^\]]*\]\s*", "", lines[0]) if lines else ""
    return text.split(". ")[0] or type(exc).__name__


__all__ = ["announce", "await_parties", "check_agreement", "connect", "free_port", "gloo_reason", "parse_address"]
