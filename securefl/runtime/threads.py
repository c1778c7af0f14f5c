"""How many threads a party's numeric libraries may use while it runs.

Parties of a simulated federation share the machine's cores, and idle library
threads do not stay idle: torch's OpenMP workers and OpenBLAS's pthreads spin for a
while after every call, taking a core from the party (or the HE helper process) that
has real work. Measured on the 2-core development machine, HE-VFL (packed CKKS) on
breast took 233 ms per step with the default two threads per library and 166 ms with
one, and one packed product in the helper process slowed the caller's from ~45 ms to
~85 ms while the helper's BLAS threads spun.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import torch
from threadpoolctl import OpenBLASController, threadpool_limits


class _BLASLimit:
    """The BLAS thread limit of overlapping party threads, set once and restored once.

    torch's setting is per thread, but a pthreads OpenBLAS pool's is the process's,
    and threadpoolctl lets only one live thread change it at a time. Were each party
    thread to save and restore it, a party that entered while another held the limit
    would save 1 as "original" and, once the other had ended, restore that: the
    process would keep one BLAS thread for good. So the first thread in records the
    original limits, the last one out restores them, and each takes control first.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._first: threadpool_limits | None = None

    def enter(self, threads: int) -> None:
        with self._lock:
            if self._users == 0:
                _take_control()
                self._first = threadpool_limits(limits=threads, user_api="blas")
            else:  # an OpenMP-threaded BLAS keeps a limit per thread; a pthreads one ignores this
                threadpool_limits(limits=threads, user_api="blas")
            self._users += 1

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._first is not None:
                _take_control()
                self._first.restore_original_limits()
                _take_control()  # and give it up: a later thread may set it
                self._first = None


def _take_control() -> None:
    """Let the calling thread set a pthreads OpenBLAS limit (threadpoolctl >= 3.6 gives it to one thread)."""
    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear()


_BLAS = _BLASLimit()


@contextmanager
def intra_op_threads(threads: int | None) -> Iterator[None]:
    """Run the body with ``threads`` torch intra-op and BLAS threads, then restore (None: as is)."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    _BLAS.enter(threads)
    try:
        yield
    finally:
        _BLAS.leave()
        torch.set_num_threads(before)


__all__ = ["intra_op_threads"]
