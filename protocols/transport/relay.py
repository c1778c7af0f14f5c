"""Progress callbacks for parties that run in processes of their own.

A party role gets its progress callback inside its config. In-process parties call the
caller's function directly; a ``backend="torch"`` party lives in another process, where
the caller's function (a tqdm bar, a closure) cannot go. :func:`relayed` hands such
parties a :class:`Relay` instead: a picklable callable whose calls travel back over a
queue and run in the caller's process, so ``--backend torch`` shows the same bar.
Only the call's arguments (numbers and a phase name) cross; nothing of a peer's.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

Callback = Callable[..., None]
_DONE = None  # sentinel that ends the forwarding thread


class Relay:
    """A callable for a party process: each call is queued and replayed in the launcher."""

    def __init__(self, callback: Callback) -> None:
        self._callback = callback
        self._queue = mp.get_context("spawn").Queue()

    def __call__(self, *args: Any) -> None:
        self._queue.put(args)

    def __getstate__(self) -> dict[str, Any]:
        return {"_queue": self._queue, "_callback": None}  # the callback stays with the launcher

    def _forward(self, failed: list[BaseException]) -> None:
        """Replay calls until the end; after the callback's first exception (kept in ``failed``) only
        drain them, so no party process blocks at its exit on a full queue."""
        while (args := self._queue.get()) is not _DONE:
            if failed:
                continue
            try:
                self._callback(*args)
            except BaseException as exc:  # noqa: BLE001 - raised in the launcher when forwarding ends
                failed.append(exc)

    @contextmanager
    def forwarding(self) -> Iterator[Relay]:
        """Replay the queued calls in a thread of this process while the body runs. If the callback
        raised, its first exception is raised here once the body is done (as in process, where the
        callback's exception fails the run), unless the body raised one of its own."""
        failed: list[BaseException] = []
        thread = threading.Thread(target=self._forward, args=(failed,), name="progress-relay", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._queue.put(_DONE)
            thread.join(timeout=5)
            self._queue.close()
        if failed:
            failed[0].add_note("raised by the progress callback, called for a party in another process")
            raise failed[0]


@contextmanager
def relayed(callback: Callback | None, backend: str) -> Iterator[Callback | None]:
    """The progress callback to give parties of ``backend``: ``callback`` itself in process,
    a forwarding :class:`Relay` for the torch backend, None when there is none."""
    if callback is None or backend == "inprocess":
        yield callback
        return
    with Relay(callback).forwarding() as relay:
        yield relay


__all__ = ["Relay", "relayed"]
