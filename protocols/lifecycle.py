"""Process lifetime helpers shared by every layer that starts worker processes.

A SIGTERM sent to one process alone (``kill``, ``timeout``, a job scheduler) does not reach
the processes it started: Ctrl-C signals a whole process group, SIGTERM does not. Workers
then run on as orphans, using cores while their results have nowhere to go.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """End this process (SIGTERM) when the process that started it dies.

    Call it first in a worker: as a ``ProcessPoolExecutor`` initializer or at the top of a
    ``multiprocessing.Process`` target. Linux only (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
    no-op. The kernel ties the signal to the *thread* that forked the worker, so start
    workers from a thread that outlives them (the main thread, a forkserver, or the thread
    that joins them).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent was already gone before the request took effect
        os._exit(1)


__all__ = ["die_with_parent"]
