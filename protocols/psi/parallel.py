"""One party's secret scalar and the worker processes that apply it.

Blinding is CPU-bound (one X25519 per element), so a :class:`Blinder` cuts its
input into chunks, ships each chunk as one contiguous bytes blob to a process pool,
and joins the results in order. The scalar travels only to these worker processes
(inside task arguments); it is never put in a message, a repr, a log or a result.

Small inputs (under ``min_parallel`` elements) are blinded in the calling thread:
starting processes would cost more than it saves. A caller may pass its own
``executor`` (for example one pool shared by both parties of an in-process run, so
the run does not start more processes than there are cores); it is then used for
every input and never shut down here.

Workers start by forkserver (spawn where there is none), so, as with any
multiprocessing code, a script that runs PSI on large inputs must guard its entry
point with ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import multiprocessing
from array import array
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from typing import Sequence

import numpy as np

from protocols.lifecycle import die_with_parent, worker_count
from protocols.psi.curve import POINT_BYTES, blind_chunk, hash_and_blind_chunk, new_scalar

MIN_PARALLEL = 4096  # below this many elements, blind in the calling thread
MAX_CHUNK = 8192  # elements per task: ~0.25 s of work, so the last tasks finish close together
MIN_CHUNK = 256


def resolve_workers(workers: int | None) -> int:
    """The number of worker processes: ``None`` means all cores; 0 means none (inline)."""
    return worker_count(workers)


def make_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool for blinding. Workers start by forkserver where available (else
    spawn): forking a process whose party threads may hold locks is unsafe. A worker ends with
    the process that started it (the forkserver, which ends with this process)."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent)


class Blinder:
    """Holds a fresh secret scalar and blinds IDs and points with it, in parallel.

    Use as a context manager: a pool it starts itself is shut down on exit.
    """

    def __init__(self, *, workers: int | None = None, executor: Executor | None = None,
                 min_parallel: int = MIN_PARALLEL) -> None:
        self._scalar = new_scalar()
        self.workers = resolve_workers(workers)
        self._executor = executor
        self._owned: ProcessPoolExecutor | None = None
        self.min_parallel = min_parallel

    def __repr__(self) -> str:
        return f"Blinder(workers={self.workers}, scalar=<secret>)"

    def __enter__(self) -> Blinder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut down the pool this blinder started (not one it was given)."""
        if self._owned is not None:
            self._owned.shutdown(wait=True, cancel_futures=True)
            self._owned = None

    def _pool(self, n: int) -> Executor | None:
        """The executor for ``n`` elements, or None to work inline."""
        if self._executor is not None:
            return self._executor
        if self.workers == 0 or n < self.min_parallel:
            return None
        if self._owned is None:
            self._owned = make_pool(self.workers)
        return self._owned

    def _chunk_size(self, n: int) -> int:
        tasks = 4 * max(self.workers, 1)  # a few tasks per worker evens out the finish
        return max(MIN_CHUNK, min(MAX_CHUNK, -(-n // tasks)))

    def hash_and_blind(self, ids: Sequence[str]) -> np.ndarray:
        """Singly-blinded points of ``ids`` (validated str), shape (n, 32), in input order."""
        pool = self._pool(len(ids))
        if not ids:
            out = b""
        elif pool is None:
            out = hash_and_blind_chunk(self._scalar, *_encode(ids))
        else:
            size = self._chunk_size(len(ids))
            blobs, lengths = zip(*(_encode(ids[i:i + size]) for i in range(0, len(ids), size)))
            out = b"".join(pool.map(partial(hash_and_blind_chunk, self._scalar), blobs, lengths))
        return np.frombuffer(out, dtype=np.uint8).reshape(len(ids), POINT_BYTES)

    def blind(self, points: np.ndarray, *, out_bytes: int) -> np.ndarray:
        """Blind each row of ``points`` (n, 32); keep ``out_bytes`` of each: shape (n, out_bytes)."""
        n = len(points)
        pool = self._pool(n)
        data = np.ascontiguousarray(points, dtype=np.uint8)
        if n == 0 or pool is None:
            out = blind_chunk(self._scalar, data.tobytes(), out_bytes)
        else:
            size = self._chunk_size(n)
            blobs = [data[i:i + size].tobytes() for i in range(0, n, size)]
            out = b"".join(pool.map(partial(blind_chunk, self._scalar, out_bytes=out_bytes), blobs))
        return np.frombuffer(out, dtype=np.uint8).reshape(n, out_bytes)


def _encode(ids: Sequence[str]) -> tuple[bytes, bytes]:
    """IDs as one UTF-8 blob plus their byte lengths (uint64, native order)."""
    encoded = [s.encode("utf-8") for s in ids]
    return b"".join(encoded), array("Q", map(len, encoded)).tobytes()
