"""The `Transport` interface every party-role function talks through.

A transport is bound to one party. ``send`` encodes a message with the safe codec
and counts it; ``recv`` waits for the message with exactly the awaited sender and
tag, decodes and checks it, counts it and (when recording) logs it. Backends only
move frames: counting, tag checks and the delivery log live here, once.
"""

from __future__ import annotations

import copy
import threading
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from protocols.codec import Message, Tag, check_tag, decode, decode_header, encode
from protocols.errors import (DecodeError, InputError, PeerFailedError, PeerTimeoutError, ProtocolError,
                              TagMismatchError)

DEFAULT_TIMEOUT = 120.0


@dataclass
class CommMeter:
    """Bytes and messages one party sent and received, per peer and per tag stage/name."""

    party: str
    bytes_sent: int = 0
    messages_sent: int = 0
    bytes_received: int = 0
    messages_received: int = 0
    sent_to: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    received_from: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    per_tag: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count_send(self, dst: str, tag: Tag, nbytes: int) -> None:
        with self._lock:
            self.bytes_sent += nbytes
            self.messages_sent += 1
            self.sent_to[dst][0] += nbytes
            self.sent_to[dst][1] += 1
            key = f"{tag.stage}/{tag.name}"
            self.per_tag[key][0] += nbytes
            self.per_tag[key][1] += 1

    def count_recv(self, src: str, nbytes: int) -> None:
        with self._lock:
            self.bytes_received += nbytes
            self.messages_received += 1
            self.received_from[src][0] += nbytes
            self.received_from[src][1] += 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (per-tag counts are for messages this party sent)."""
        with self._lock:
            return {
                "party": self.party,
                "bytes_sent": self.bytes_sent,
                "messages_sent": self.messages_sent,
                "bytes_received": self.bytes_received,
                "messages_received": self.messages_received,
                "sent_to": {k: {"bytes": v[0], "messages": v[1]} for k, v in self.sent_to.items()},
                "received_from": {k: {"bytes": v[0], "messages": v[1]}
                                  for k, v in self.received_from.items()},
                "per_tag": {k: {"bytes": v[0], "messages": v[1]} for k, v in self.per_tag.items()},
            }


class Mailbox:
    """Frames that arrived for one party, filed by (sender, tag) until awaited."""

    def __init__(self) -> None:
        self._frames: dict[tuple[str, Tag], deque[bytes]] = defaultdict(deque)
        self._errors: dict[str, Exception] = {}
        self._aborted: Exception | None = None
        self._cond = threading.Condition()

    def put(self, src: str, frame: bytes) -> None:
        """File a frame from ``src`` under the tag its header names."""
        try:
            header, _ = decode_header(frame)
            tag = Tag.from_json(header.get("tag"))
        except DecodeError as exc:
            with self._cond:
                self._errors[src] = exc
                self._cond.notify_all()
            return
        with self._cond:
            self._frames[(src, tag)].append(frame)
            self._cond.notify_all()

    def unread(self) -> list[bytes]:
        """The frames that arrived and were never awaited, in no particular order (left in place)."""
        with self._cond:
            return [frame for frames in self._frames.values() for frame in frames]

    def fail_peer(self, src: str, exc: Exception) -> None:
        """Make every wait on ``src`` raise ``exc`` (the link to it broke)."""
        with self._cond:
            self._errors.setdefault(src, exc)
            self._cond.notify_all()

    def failure(self, src: str) -> Exception | None:
        """Why waits on ``src`` fail (it closed its transport, its link broke), or None."""
        with self._cond:
            return self._errors.get(src)

    def abort(self, exc: Exception) -> None:
        """Wake every waiter with ``exc``: the run is over."""
        with self._cond:
            self._aborted = exc
            self._cond.notify_all()

    def get(self, src: str, tag: Tag, timeout: float) -> bytes:
        key = (src, tag)

        def ready() -> bool:
            return bool(self._frames.get(key)) or src in self._errors or self._aborted is not None

        with self._cond:
            if not self._cond.wait_for(ready, timeout=timeout):
                raise PeerTimeoutError(src, tag, timeout)
            if self._frames.get(key):
                frame = self._frames[key].popleft()
                if not self._frames[key]:
                    del self._frames[key]
                return frame
            raise fresh(self._errors.get(src) or self._aborted)  # type: ignore[arg-type]


def fresh(exc: BaseException) -> BaseException:
    """A new instance of the stored ``exc``, to raise from one wait: raising the one instance from every
    wait and thread grew its traceback without bound (3000 entries after 1000 waits) and shared it.
    Its cause stays; an exception that cannot be rebuilt from its arguments goes as it is, its
    traceback dropped."""
    try:
        new = copy.copy(exc)
    except Exception:  # noqa: BLE001 - e.g. a caller's exception whose constructor takes other arguments
        return exc.with_traceback(None)
    new.__cause__, new.__suppress_context__ = exc.__cause__, exc.__suppress_context__
    return new.with_traceback(None)


def checked_timeout(timeout: Any, what: str, *, poll: bool = False) -> float:
    """``timeout`` as float seconds; InputError naming ``what`` unless it is a number a wait can
    take (NaN waited forever, inf overflowed the clock, a str failed inside the wait): positive,
    or with ``poll`` also 0, a look that does not wait."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not (0 <= timeout if poll else 0 < timeout) or not timeout <= threading.TIMEOUT_MAX:
        kind = "a number of seconds >= 0" if poll else "a positive number of seconds"
        raise InputError(f"{what} must be {kind}, got {timeout!r}")
    return float(timeout)


class Transport(ABC):
    """One party's endpoint: tagged send/recv to named peers, counted in one place."""

    def __init__(self, name: str, parties: tuple[str, ...], *, timeout: float = DEFAULT_TIMEOUT,
                 record: bool = False) -> None:
        if not all(isinstance(p, str) and p for p in parties):
            raise InputError(f"party names must be non-empty strings, got {list(parties)}")
        if name not in parties:
            raise InputError(f"party {name!r} is not one of the parties {list(parties)}")
        if len(set(parties)) != len(parties):
            raise InputError(f"party names must be unique, got {list(parties)}")
        self.name = name
        self.parties = tuple(parties)
        self.timeout = checked_timeout(timeout, "timeout")
        self.meter = CommMeter(name)
        self.record = record
        self.log: list[Message] = []
        self._mailbox = Mailbox()
        self._closed = False

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(p for p in self.parties if p != self.name)

    def _check_peer(self, peer: str) -> None:
        if peer == self.name or peer not in self.parties:
            raise InputError(f"party {self.name!r} has no peer named {peer!r} (peers: {list(self.peers)})")

    def send(self, dst: str, tag: Tag, fields: Mapping[str, Any] | None = None, /,
             **kwfields: Any) -> int:
        """Send ``fields`` to ``dst`` under ``tag``; return the bytes put on the wire. PeerFailedError
        (and nothing counted) once ``dst`` is known gone: it closed its transport or its link broke."""
        self._check_peer(dst)
        check_tag(tag)
        if fields is not None and not isinstance(fields, Mapping):
            raise InputError(f"fields must be a mapping of field names to values, got {type(fields).__name__}")
        if self._closed:
            raise ProtocolError(f"party {self.name!r} sent after closing its transport")
        gone = self._mailbox.failure(dst)
        if isinstance(gone, PeerFailedError):  # a network backend would buffer the frame and report it sent
            raise PeerFailedError(f"party {self.name!r} cannot send to {dst!r}: {gone}")
        frame = encode(self.name, dst, tag, {**(fields or {}), **kwfields})
        self._send_frame(dst, frame)
        self.meter.count_send(dst, tag, len(frame))
        return len(frame)

    def recv(self, src: str, tag: Tag, *, timeout: float | None = None) -> Message:
        """Wait for the message from ``src`` with exactly ``tag``; decode and check it."""
        self._check_peer(src)
        check_tag(tag)
        wait = self.timeout if timeout is None else checked_timeout(timeout, "recv timeout", poll=True)
        frame = self._mailbox.get(src, tag, wait)
        message = decode(frame)
        if message.src != src or message.dst != self.name or message.tag != tag:
            raise TagMismatchError(
                f"party {self.name!r} awaited {tag} from {src!r} but the frame says"
                f" {message.tag} from {message.src!r} to {message.dst!r}")
        self.meter.count_recv(src, len(frame))
        if self.record:
            self.log.append(message)
        return message

    def delivered(self) -> list[Message]:
        """With ``record``: every message delivered to this party -- those it awaited, in order, then
        those that arrived and were never awaited (a peer's late or unexpected message is something
        the party saw too, so what it learns is read from this, not from ``log`` alone)."""
        if not self.record:
            return []
        late = []
        for frame in self._mailbox.unread():
            try:
                late.append(decode(frame))
            except DecodeError:  # a frame no recv could have read: the party learns nothing from it
                continue
        return [*self.log, *sorted(late, key=lambda m: (m.src, m.tag.round, m.tag.stage, m.tag.name))]

    def broadcast(self, dsts: Any, tag: Tag, fields: Mapping[str, Any] | None = None, /,
                  **kwfields: Any) -> int:
        """Send the same fields to every party in ``dsts``; return total bytes."""
        return sum(self.send(dst, tag, fields, **kwfields) for dst in dsts)

    def abort(self, exc: Exception | None = None) -> None:
        """Stop waiting: every pending and later ``recv`` raises ``exc``."""
        self._mailbox.abort(exc or PeerFailedError(f"party {self.name!r} aborted"))

    def close(self) -> None:
        """Release the backend's resources. Idempotent."""

    @abstractmethod
    def _send_frame(self, dst: str, frame: bytes) -> None:
        """Move one encoded frame to ``dst`` (backend-specific)."""


def send_to_present(transport: Transport, recipients: Sequence[str], tag: Tag, **fields: Any) -> list[str]:
    """Send ``fields`` to each recipient still there; those that left are skipped (they dropped out).
    Returns the recipients reached."""
    reached = []
    for name in recipients:
        try:
            transport.send(name, tag, **fields)
        except PeerFailedError:
            continue
        reached.append(name)
    return reached
