"""The in-process backend: every party in one process, each in its own thread.

Frames still pass through the codec, so counting, tag checks and the delivery log
are exactly those of the multi-process backend.
"""

from __future__ import annotations

from typing import Iterable

from protocols.errors import InputError, PeerFailedError
from protocols.transport.base import DEFAULT_TIMEOUT, Transport


class InProcessNetwork:
    """A set of named parties wired together in memory."""

    def __init__(self, parties: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT,
                 record: bool = False) -> None:
        names = tuple(parties)
        if len(names) < 2:
            raise InputError(f"a network needs at least two parties, got {list(names)}")
        self.parties = names
        self.transports = {name: InProcessTransport(name, names, self, timeout=timeout, record=record)
                           for name in names}

    def __getitem__(self, name: str) -> "InProcessTransport":
        try:
            return self.transports[name]
        except KeyError:
            raise InputError(f"no party named {name!r} (parties: {list(self.parties)})") from None

    def abort(self, exc: Exception) -> None:
        """Wake every party still waiting: ``exc`` is raised in each."""
        for transport in self.transports.values():
            transport.abort(exc)


class InProcessTransport(Transport):
    """A party's endpoint on an :class:`InProcessNetwork`."""

    def __init__(self, name: str, parties: tuple[str, ...], network: InProcessNetwork, *,
                 timeout: float, record: bool) -> None:
        super().__init__(name, parties, timeout=timeout, record=record)
        self._network = network

    def _send_frame(self, dst: str, frame: bytes) -> None:
        self._network.transports[dst]._mailbox.put(self.name, frame)

    def close(self, reason: Exception | None = None) -> None:
        """This party is done, as a torch party's closed transport says: its peers' sends to it raise
        PeerFailedError (``reason``, if given) and so do their waits on it, once no message it sent
        before matches. Idempotent."""
        if self._closed:
            return
        self._closed = True
        gone = reason or PeerFailedError(f"party {self.name!r} closed its transport (it finished, failed or"
                                         " was stopped; its own output says which)")
        for peer in self.peers:
            self._network.transports[peer]._mailbox.fail_peer(self.name, gone)
