"""Blocking gloo calls made in a helper thread, so that the calling thread can stop waiting on them.

A thread blocked in gloo answers nothing until gloo returns: not Ctrl-C (Python runs signal handlers
in the main thread, between bytecodes), and not the death of the peer. gloo fails a send that is
still in flight when the link to its peer breaks only if the send itself saw the break: when the
peer's receiver thread saw it first, the send waits out the process group's timeout (days).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, TypeVar

from protocols.lifecycle import mark_stranded

POLL = 0.1
"""Seconds between the caller's looks for Ctrl-C and for a reason to stop waiting."""
T = TypeVar("T")
Gone = Callable[[], "BaseException | None"]


class Stranded(Exception):
    """The call was left blocked in native code: ``reason`` says it will not return."""

    def __init__(self, reason: BaseException) -> None:
        super().__init__(str(reason))
        self.reason = reason


def run_beside(call: Callable[[], T], name: str, *, gone: Gone | None = None, poll: float = POLL) -> T:
    """``call()``'s value (or its exception), run in a new daemon thread named ``name`` while this
    thread waits as :meth:`Helper.run` does."""
    job = _Job(call)
    threading.Thread(target=job, daemon=True, name=name).start()
    return job.wait(gone, poll)


class Helper:
    """One daemon thread that runs the calls given to :meth:`run` in turn (a thread per call would
    cost about 0.1 ms each)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True, name=name).start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def run(self, call: Callable[[], T], *, gone: Gone | None = None, poll: float = POLL) -> T:
        """``call()``'s value (or its exception), run in the helper while this thread looks every
        ``poll`` s for Ctrl-C and for ``gone()``.

        If ``gone()`` returns an exception while the call runs, :class:`Stranded` with it is raised;
        Ctrl-C is re-raised. Either way the helper stays blocked (use it no more), and the process is
        marked (``mark_stranded``), so that it ends with ``os._exit`` rather than in gloo's destructors.
        """
        job = _Job(call)
        self._jobs.put(job)
        return job.wait(gone, poll)

    def stop(self) -> None:
        """End the helper once the calls given to it are done."""
        self._jobs.put(None)


class _Job:
    """One call, run by whichever thread calls the job, awaited by the thread that made it."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._done = threading.Event()
        self._outcome: dict[str, Any] = {}

    def __call__(self) -> None:
        try:
            self._outcome["value"] = self._call()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the waiting thread
            self._outcome["error"] = exc
        finally:
            self._done.set()

    def wait(self, gone: Gone | None, poll: float) -> Any:
        try:
            while not self._done.wait(poll):
                reason = gone() if gone is not None else None
                if reason is not None and not self._done.is_set():
                    raise Stranded(reason)
        except BaseException:
            if not self._done.is_set():
                mark_stranded()
            raise
        if "error" in self._outcome:
            raise self._outcome.pop("error")
        return self._outcome["value"]


__all__ = ["POLL", "Helper", "Stranded", "run_beside"]
