"""The torch.distributed backend: one party per process or machine, over gloo.

Each frame travels as an int64 length followed by its bytes on the point-to-point
link between two ranks. One receiver thread per peer files arriving frames in the
mailbox, so a party can await messages by tag in any order, and a silent peer ends
in :class:`PeerTimeoutError` instead of a hang. A length of -1 closes a link.
"""

from __future__ import annotations

import datetime as _dt
import functools
import multiprocessing as mp
import pickle
import queue
import sys
import threading
import time
import traceback
from typing import Any, Mapping

import torch
import torch.distributed as dist
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.errors import (CryptoError, DecodeError, InputError, PeerFailedError, ProtocolError,
                              SecureFLError)
from protocols.lifecycle import ctrl_c_stays_here, die_with_parent, exit_status, mark_stranded
from protocols.transport.base import DEFAULT_TIMEOUT, Transport, checked_timeout
from protocols.transport.links import MAX_HANDSHAKE_BYTES, SEALED_LENGTH_BYTES, Link, check_identity, handshake
from protocols.transport.rendezvous import (announce, await_parties, check_agreement, connect, free_port, gloo_reason,
                                             parse_address)
from protocols.transport.watch import Helper, Stranded, run_beside

_CLOSE = -1
LINGER = 30.0
"""Seconds a closing party waits for its peers' goodbyes, so its last frames are read."""
LINGER_ON_FAILURE = 1.0
"""The same after an error or Ctrl-C: a peer busy in a long computation (an STFL passive party
pretraining its VAE) says goodbye only when it next sends, and there is nothing left to read."""
MAX_FRAME_BYTES = 1 << 34
# The gloo group's own timeout bounds every blocking recv, including an idle
# receiver thread's; waits for messages are bounded by the mailbox instead.
_GROUP_TIMEOUT = _dt.timedelta(days=7)


class TorchDistTransport(Transport):
    """A party's endpoint on a torch.distributed (gloo) process group.

    ``parties`` lists every party in rank order; all processes must pass the same
    list. The party at rank 0 listens on ``host:port`` for the rendezvous.
    """

    def __init__(self, name: str, parties: tuple[str, ...], *, host: str, port: int,
                 timeout: float = DEFAULT_TIMEOUT, connect_timeout: float = 60.0,
                 record: bool = False, agree: Mapping[str, Any] | None = None,
                 identity: X25519PrivateKey | None = None, trusted: Mapping[str, bytes] | None = None) -> None:
        """``agree``: JSON-ready settings every party must have been given alike (e.g. the
        method); at the rendezvous each party compares them and the party list with every
        other's, so a mismatch is one clear ProtocolError on every side instead of a hang.

        ``identity`` (this party's static X25519 key) with ``trusted`` (every peer's raw
        public key) authenticates and encrypts every link (:mod:`protocols.transport.links`);
        every party must then have them.
        """
        super().__init__(name, tuple(parties), timeout=timeout, record=record)
        check_identity(name, self.peers, identity, trusted)
        self._agree = {"parties": list(self.parties), "authenticated": identity is not None, **dict(agree or {})}
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InputError(f"invalid port {port!r}: must be an integer in 1-65535")
        connect_timeout = checked_timeout(connect_timeout, "connect_timeout")
        if dist.is_initialized():
            raise ProtocolError("torch.distributed is already initialised in this process")
        self.rank = self.parties.index(name)
        self._rendezvous(host, port, connect_timeout)
        self._send_locks = {peer: threading.Lock() for peer in self.peers}
        self._broken: set[str] = set()  # peers whose link broke under a receiver
        self._stranded_to: set[str] = set()  # peers a send was left blocked on (see _send_watched)
        self._links: dict[str, Link] = {}  # plain lengths and frames until every handshake is done
        if identity is not None and trusted is not None:
            try:
                self._links = self._authenticate(identity, trusted)
            except Exception:  # no transport to close: leave the group here, so the process may join again
                dist.destroy_process_group()
                raise  # (after Ctrl-C a handshake thread stays blocked in gloo: _authenticate marks it stranded)
        self._senders = {peer: Helper(f"send-{name}->{peer}") for peer in self.peers}  # see _send_watched
        self._receivers = [threading.Thread(target=self._receive_loop, args=(peer,), daemon=True,
                                            name=f"recv-{name}<-{peer}") for peer in self.peers]
        for thread in self._receivers:
            thread.start()

    def _rendezvous(self, host: str, port: int, connect_timeout: float) -> None:
        """Join the process group; a peer that never comes or a busy port is one clear error.

        torch's own waits for peers (in ``TCPStore``) hold the GIL, so Ctrl-C would go
        unanswered until they time out. Here every wait for a peer is a short call in a
        Python loop (see :mod:`protocols.transport.rendezvous`).
        """
        deadline = time.monotonic() + connect_timeout
        try:
            store = connect(host, port, len(self.parties), self.rank == 0, deadline)
            announce(store, self.rank, self._agree)
            await_parties(store, len(self.parties), deadline)
            check_agreement(store, self.name, self.parties, self._agree, serving=self.rank == 0)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=len(self.parties),
                                    timeout=_GROUP_TIMEOUT)
        except (RuntimeError, TimeoutError) as exc:  # torch's DistNetworkError / DistStoreError, gloo's own
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            where = f"party {self.name!r}: rendezvous at {host}:{port} failed: {reason}"
            if "timed out" in reason.lower():
                where += f" (start every party with the same address, or allow more than {connect_timeout:g} s)"
            elif "EADDRINUSE" in reason:
                where = (f"party {self.name!r}: cannot listen at {host}:{port}: the port is in use (another"
                         f" party started as {self.parties[0]!r}, or another program); each run needs a free port")
            raise ProtocolError(where) from None

    def _rank(self, party: str) -> int:
        return self.parties.index(party)

    def _authenticate(self, identity: X25519PrivateKey, trusted: Mapping[str, bytes]) -> dict[str, Link]:
        """:meth:`_handshakes` in a helper thread, so that Ctrl-C reaches this one while a peer
        has not answered: gloo's ``recv`` would hold the main thread until the peer did (after
        Ctrl-C the helper stays blocked in gloo on the silent peer, and the process is marked)."""
        return run_beside(functools.partial(self._handshakes, identity, trusted), f"handshake-{self.name}")

    def _handshakes(self, identity: X25519PrivateKey, trusted: Mapping[str, bytes]) -> dict[str, Link]:
        """One handshake per peer, before the receivers run, in one global order of pairs
        (the lower rank initiates), so no two parties wait on each other."""
        links: dict[str, Link] = {}
        for peer in sorted(self.peers, key=self._rank):
            try:
                links[peer] = handshake(self.name, peer, initiator=self.rank < self._rank(peer), identity=identity,
                                        trusted=bytes(trusted[peer]), send=functools.partial(self._send_plain, peer),
                                        recv=functools.partial(self._recv_plain, peer))
            except RuntimeError as exc:
                raise ProtocolError(f"party {self.name!r}: the link to {peer!r} broke during its handshake:"
                                    f" {gloo_reason(exc)}") from None
        return links

    def _send_plain(self, dst: str, payload: bytes) -> None:
        with self._send_locks[dst]:
            self._send_raw(dst, len(payload), payload)

    def _recv_plain(self, src: str) -> bytes:
        """One frame from ``src`` while no receiver runs (the handshake); a small one only."""
        size = self._recv_length(src)
        return bytes(self._recv_payload(src, size)) if 0 < size <= MAX_HANDSHAKE_BYTES else b""  # b"": fails

    def _recv_length(self, src: str) -> int:
        """The length in front of ``src``'s next frame; sealed (CryptoError if forged) once links run."""
        link = self._links.get(src)
        if link is not None:
            sealed = torch.zeros(SEALED_LENGTH_BYTES, dtype=torch.uint8)
            dist.recv(sealed, src=self._rank(src))
            return link.open_length(sealed.numpy().tobytes())
        length = torch.zeros(1, dtype=torch.int64)
        dist.recv(length, src=self._rank(src))
        return int(length.item())

    def _recv_payload(self, src: str, size: int) -> bytes | memoryview:
        """``size`` bytes from ``src``, in the buffer gloo wrote (no copy: pages a short send
        never touched are never committed)."""
        buf = torch.empty(size, dtype=torch.uint8)
        if size:
            dist.recv(buf, src=self._rank(src))
        return memoryview(buf.numpy())

    def _receive_loop(self, peer: str) -> None:
        try:
            while True:
                size = self._recv_length(peer)
                if size == _CLOSE:
                    self._mailbox.fail_peer(peer, PeerFailedError(
                        f"party {peer!r} closed its transport (it finished, failed or was stopped;"
                        " its own output says which)"))
                    return
                if not 0 <= size <= MAX_FRAME_BYTES:
                    self._mailbox.fail_peer(peer, DecodeError(f"party {peer!r} announced a frame of {size} bytes"))
                    return
                frame = self._recv_payload(peer, size)
                if self._links:
                    frame = self._links[peer].open(frame)
                self._mailbox.put(peer, frame)
        except CryptoError as exc:  # a forged, replayed or altered length or frame
            self._mailbox.fail_peer(peer, exc)
        except RuntimeError as exc:  # gloo reports a broken link as RuntimeError
            self._broken.add(peer)
            self._mailbox.fail_peer(peer, PeerFailedError(f"link to party {peer!r} broke: {gloo_reason(exc)}"))

    def _send_raw(self, dst: str, size: int, payload: bytes | None) -> None:
        """Send a length (and the payload), both as they are; callers hold ``dst``'s send lock."""
        dist.send(torch.tensor([size], dtype=torch.int64), dst=self._rank(dst))
        if payload:
            dist.send(torch.frombuffer(bytearray(payload), dtype=torch.uint8), dst=self._rank(dst))

    def _send_framed(self, dst: str, frame: bytes | None) -> None:
        """Send ``frame`` (None: the close signal) behind its length; over an authenticated link both
        sealed. Callers hold ``dst``'s send lock, so the link's counters follow the wire."""
        link = self._links.get(dst)
        if link is None:
            self._send_raw(dst, _CLOSE if frame is None else len(frame), frame)
            return
        size = _CLOSE if frame is None else link.sealed_size(len(frame))
        head = link.seal_length(size)
        dist.send(torch.frombuffer(bytearray(head), dtype=torch.uint8), dst=self._rank(dst))
        if frame is not None:
            dist.send(torch.frombuffer(bytearray(link.seal(frame)), dtype=torch.uint8), dst=self._rank(dst))

    def _send_frame(self, dst: str, frame: bytes) -> None:
        self._send_watched(dst, frame)

    def _send_watched(self, dst: str, frame: bytes | None) -> None:
        """:meth:`_send_framed` in ``dst``'s sender thread: gloo never fails a send in flight when the
        receiver sees the link break first, so the send is left blocked then. Either way the break is
        PeerFailedError naming both parties (gloo's RuntimeError, the first time, otherwise)."""
        if dst in self._stranded_to:
            raise PeerFailedError(f"party {self.name!r} cannot send to {dst!r}: an earlier send to it never ended")
        with self._send_locks[dst]:  # sealing and sending in one order: the counter is the wire's
            try:
                self._senders[dst].run(functools.partial(self._send_framed, dst, frame),
                                       gone=lambda: self._mailbox.failure(dst) if dst in self._broken else None)
            except Stranded as exc:
                self._stranded_to.add(dst)
                raise PeerFailedError(f"party {self.name!r} cannot send to {dst!r}: {exc.reason}") from None
            except KeyboardInterrupt:
                self._stranded_to.add(dst)
                raise
            except RuntimeError as exc:  # gloo's own report of the break
                gone = PeerFailedError(f"link to party {dst!r} broke: {gloo_reason(exc)}")
                self._mailbox.fail_peer(dst, gone)
                raise PeerFailedError(f"party {self.name!r} cannot send to {dst!r}: {gone}") from None

    def __enter__(self) -> "TorchDistTransport":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close; after an error or Ctrl-C, without waiting out the peers' goodbyes."""
        self.close(linger=LINGER_ON_FAILURE if exc_type is not None else LINGER)

    def close(self, *, linger: float = LINGER) -> None:
        """Tell every peer this party is done, wait (up to ``linger`` s) for theirs, and leave the group."""
        if self._closed:
            return
        self._closed = True
        for peer in self.peers:
            try:
                self._send_watched(peer, None)
            except PeerFailedError:
                pass  # that peer is gone already; nothing to tell it
            self._senders[peer].stop()
        deadline = time.monotonic() + linger
        for thread in self._receivers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._stranded_to or any(thread.is_alive() for thread in self._receivers):
            mark_stranded()  # a peer still busy elsewhere: its receiver (or a send to it) stays blocked in gloo
        else:
            dist.destroy_process_group()


def _child(name: str, parties: tuple[str, ...], role: Any, kwargs: Mapping[str, Any], port: int,
           timeout: float, record: bool, results: Any) -> None:
    """Body of one party's process: build the transport, run the role, report back. The
    party ends with the launcher (a SIGTERM to it alone would leave parties waiting on peers)."""
    die_with_parent()
    try:
        with TorchDistTransport(name, parties, host="127.0.0.1", port=port, timeout=timeout,
                                record=record) as transport:
            value = role(transport, **kwargs)
        results.put(_report(name, "ok", value, transport.meter.to_dict(), transport.delivered(),
                            _own_gpu_peak()))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which re-raises
        results.put(_report(name, "error", _portable(exc), None, [], None))
    results.close()
    results.join_thread()  # the report is with the launcher before a hard exit could drop it
    exit_status(0)


def _report(name: str, status: str, value: Any, *rest: Any) -> tuple:
    """The report for the launcher, checked to pickle here: the queue pickles in its feeder thread,
    which would only print why a value cannot be pickled, and the launcher would see a party that
    ended without a result. (Only this party's own launcher reads it; nothing crosses to a peer.)"""
    report = (name, status, value, *rest)
    try:
        pickle.dumps(report)
    except Exception as exc:  # noqa: BLE001 - TypeError, PicklingError, AttributeError (a local object), ...
        what = "result" if status == "ok" else f"error ({type(value).__name__}: {value})"
        return (name, "error", ProtocolError(f"party {name!r}'s {what} cannot be sent to the launcher:"
                                             f" {type(exc).__name__}: {exc}"), None, [], None)
    return report


def _own_gpu_peak() -> float | None:
    """The most GPU memory (MiB) torch's tensors took in this party's process, or None if it never
    used CUDA. Each party of a torch-backend run is a process of its own, so the counter is its own."""
    if not torch.cuda.is_initialized():
        return None
    return round(max(torch.cuda.max_memory_allocated(d) for d in range(torch.cuda.device_count())) / 2**20, 1)


def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it is one of ours or a builtin, else a ProtocolError with its text.

    The parent process unpickles what its own child put on the queue; exceptions of
    other libraries may not survive that, so they travel as text.
    """
    cls = type(exc)
    if cls.__module__ in ("builtins", "protocols.errors") or issubclass(cls, SecureFLError):
        return exc
    return ProtocolError(f"{cls.__name__}: {exc}\n{traceback.format_exc()}")


_GUARD_HINT = ("each party process of the torch backend imports the main script again, so a script must "
               "call run_parties(backend='torch') under `if __name__ == \"__main__\":`")


def _collect(procs: list[Any], parties: tuple[str, ...], results: Any) -> dict[str, tuple]:
    """Each party's (status, value, meter, log, GPU peak) from the queue; ProtocolError if one dies silently."""
    collected: dict[str, tuple] = {}
    while len(collected) < len(parties):
        try:
            name, *report = results.get(timeout=1.0)
            collected[name] = tuple(report)
        except queue.Empty:
            dead = [p for p in procs if not p.is_alive() and p.name[6:] not in collected]
            if dead and results.empty():
                time.sleep(0.5)
                if results.empty():
                    hint = f"; if a script started it: {_GUARD_HINT}" if dead[0].exitcode == 1 else ""
                    raise ProtocolError(f"party process {dead[0].name[6:]!r} exited with code"
                                        f" {dead[0].exitcode} without a result{hint}")
    return collected


def run_parties_torch(roles: Mapping[str, Any], *, kwargs: Mapping[str, Mapping[str, Any]],
                      timeout: float, record: bool, port: int | None) -> Any:
    """Run each role in its own process over gloo on localhost (see ``run_parties``)."""
    from protocols.transport.runner import RunResult, _first_cause

    if getattr(sys.modules.get("__main__"), "__name__", None) == "__mp_main__":
        raise InputError(_GUARD_HINT)  # a party process re-running an unguarded script: stop here
    parties = tuple(roles)
    port = port or free_port()
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    # not daemonic: a party may start helper processes of its own (the packed CKKS evaluator does)
    procs = [ctx.Process(target=_child, name=f"party-{name}",
                         args=(name, parties, roles[name], dict(kwargs.get(name, {})), port, timeout,
                               record, results)) for name in parties]
    start = time.perf_counter()
    try:
        with ctrl_c_stays_here():  # the parties leave Ctrl-C to this process, which ends them
            for proc in procs:
                proc.start()
        collected = _collect(procs, parties, results)
        seconds = time.perf_counter() - start
        deadline = time.monotonic() + 30  # for them all: each reported, so each is ending
        for proc in procs:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    failures = [(n, c[1]) for n, c in collected.items() if c[0] == "error"]
    if failures:
        raise _first_cause(failures)
    return RunResult(results={n: c[1] for n, c in collected.items()}, seconds=seconds,
                     comm={n: c[2] for n, c in collected.items()},
                     logs={n: c[3] for n, c in collected.items()},
                     gpu_peak_mib={n: c[4] for n, c in collected.items() if c[4] is not None})


__all__ = ["TorchDistTransport", "free_port", "parse_address", "run_parties_torch"]
