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

    def _forward(self) -> None:
        while (args := self._queue.get()) is not _DONE:
            self._callback(*args)

    @contextmanager
    def forwarding(self) -> Iterator[Relay]:
        """Replay the queued calls in a thread of this process while the body runs."""
        thread = threading.Thread(target=self._forward, name="progress-relay", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._queue.put(_DONE)
            thread.join(timeout=5)
            self._queue.close()


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
