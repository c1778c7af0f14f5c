"""Process lifetime helpers shared by every layer that starts worker processes.

A SIGTERM sent to one process alone (``kill``, ``timeout``, a job scheduler) does not reach
the processes it started: Ctrl-C signals a whole process group, SIGTERM does not. Workers
then run on as orphans, using cores while their results have nowhere to go.

A party that fails leaves its torch.distributed receivers blocked on peers still busy
elsewhere. If a peer then sends or leaves while the interpreter shuts down, gloo's C++
destructors call ``std::terminate`` and the process dies of SIGABRT ("terminate called
without an active exception") instead of exiting with its status. The transport marks the
process (:func:`mark_stranded`); :func:`exit_status` then ends it with ``os._exit``, after
flushing its output, before that shutdown.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from protocols.errors import InputError

_PR_SET_PDEATHSIG = 1
MAX_WORKERS = 1024
"""The most worker processes or threads a pool is given: more than any host's cores."""
_STRANDED = threading.Event()
_CLEANUPS: list[Callable[[], None]] = []  # on_hard_exit's
_CLEANUPS_LOCK = threading.Lock()
"""Set once a transport of this process closed with receiver threads still blocked in native code."""


def die_with_parent() -> None:
    """End this process (SIGTERM) when the process that started it dies.

    Call it first in a worker: as a ``ProcessPoolExecutor`` initializer or at the top of a
    ``multiprocessing.Process`` target. Linux only (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
    no-op. The kernel ties the signal to the *thread* that forked the worker, so start
    workers from a thread that outlives them (the main thread, a forkserver, or the thread
    that joins them). A worker started by ``multiprocessing`` asks its launcher's sentinel
    whether the launcher still lives, so one that is PID 1 itself (a container's entry
    point) is fine; any other process takes a parent of PID 1 to mean its parent is gone.
    A worker a forkserver started has the server as its parent, and the server lives as long
    as any of its workers do; such a worker watches its launcher's sentinel instead.
    """
    launcher = multiprocessing.parent_process()
    if launcher is not None and launcher.pid != os.getppid():
        threading.Thread(target=_end_with, args=(launcher,), name="die-with-launcher", daemon=True).start()
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if _parent_gone():  # the parent was already gone before the request took effect
        os._exit(1)


def _end_with(launcher: multiprocessing.process.BaseProcess) -> None:
    launcher.join()  # returns once the launcher has ended
    os.kill(os.getpid(), signal.SIGTERM)


def _parent_gone() -> bool:
    """Whether the process that started this one has ended."""
    launcher = multiprocessing.parent_process()
    if launcher is not None:
        return not launcher.is_alive()
    return os.getppid() == 1


@contextmanager
def ctrl_c_stays_here() -> Iterator[None]:
    """Start processes in the body that never see SIGINT: the launcher alone answers Ctrl-C.

    A terminal's Ctrl-C signals the whole process group. A spawned worker still importing
    its modules would die of it with a traceback of its own, and one already running would
    race its launcher, which ends it anyway. SIGINT is blocked in the calling thread for the
    body; children inherit the block, and it survives ``exec``. In the launcher a Ctrl-C
    meanwhile goes to another thread, or waits until the block lifts: it is not lost.
    POSIX only; elsewhere (no ``pthread_sigmask``) the body runs as is.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def on_hard_exit(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` too when :func:`exit_status` ends a stranded process with ``os._exit``, which
    skips ``atexit`` (e.g. removing a private scratch folder). It must not block or raise."""
    with _CLEANUPS_LOCK:
        _CLEANUPS.append(cleanup)


def mark_stranded() -> None:
    """Record that threads of this process stay blocked in native code (a closed transport's receivers)."""
    _STRANDED.set()


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a scheduler), raised in the main thread like Ctrl-C so that
    the same ``finally`` blocks, pool shutdowns and staging clean-ups run; exit status 143."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """In the body, SIGTERM raises :class:`Terminated` in the main thread instead of ending the
    process before its clean-up runs; the previous handler is back afterwards. Only the main
    thread may set a handler: from another thread the body runs as is. Children started by
    spawn or forkserver do not inherit it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped_by(exc: KeyboardInterrupt) -> str:
    """How a one-line message names the stop: "terminated (SIGTERM)" or "interrupted" (Ctrl-C)."""
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"


def interrupted_status(exc: KeyboardInterrupt) -> int:
    """The shell's status for a stop: 143 (128 + SIGTERM) for :class:`Terminated`, else 130 (Ctrl-C)."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def exit_status(code: int) -> int:
    """``code``, for the caller to exit with; but if a transport left threads stranded
    (:func:`mark_stranded`), flush stdout and stderr and end the process now with ``code``,
    skipping the interpreter shutdown that could abort it. Call it last in a process's main."""
    if _STRANDED.is_set():
        with _CLEANUPS_LOCK:
            cleanups = list(_CLEANUPS)
        for cleanup in cleanups:
            try:
                cleanup()
            except Exception:  # noqa: BLE001 - the exit must happen; a cleanup is best effort
                pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # closed or broken: nothing more can be written to it anyway
        os._exit(code)
    return code


def worker_count(workers: int | None) -> int:
    """A pool size asked for: ``None`` means all cores, else an int in 0..MAX_WORKERS (what 0
    means is the caller's); anything else is an InputError rather than a pool that cannot start."""
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= MAX_WORKERS:
        raise InputError(f"workers must be an int in 0..{MAX_WORKERS} or None, got {workers!r}")
    return workers


__all__ = ["MAX_WORKERS", "ctrl_c_stays_here", "die_with_parent", "exit_status", "mark_stranded", "on_hard_exit",
           "worker_count"]
