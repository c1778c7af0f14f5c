"""Benchmark jobs over worker processes, stoppable with one Ctrl-C.

``ProcessPoolExecutor`` on its own does not stop on Ctrl-C: the interrupt reaches every
worker too, a job that catches it returns it as its result, and leaving the pool's
``with`` block waits for every queued job, which for a full benchmark is hours. Here the
workers start with SIGINT blocked (:func:`protocols.lifecycle.ctrl_c_stays_here`), and
when the caller is interrupted (or a job fails) the queued jobs are cancelled and the
workers are ended instead of awaited. The workers also end with their launcher
(:func:`protocols.lifecycle.die_with_parent`) and, before their first job, load what
that job would otherwise load inside its clock (:func:`securefl.runtime.preload.preload`
on the benchmark's device: a spawned worker starts with no torch modules and no CUDA
context of its own).

Workers start by spawn (a fresh interpreter) unless the caller chooses a context. A
forked worker inherits a copy of this process's memory, including any lock that one of
its threads held at the fork; no thread comes along to release it. Once torch has
run multi-threaded here, a fork risks a deadlock or a crash in the child, and one
forked GL worker did segfault in CI that way, inside torch. A process that has used
CUDA cannot fork a child that uses it either ("Cannot re-initialize CUDA in forked
subprocess"). The spawned worker's imports and preload run before its first job,
outside every job's clock.
"""

from __future__ import annotations

import gc
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from typing import Any, Callable, Sequence

from protocols.lifecycle import ctrl_c_stays_here, die_with_parent


def start_worker(device: str = "cpu", threads: int | None = None) -> None:
    """A worker's start: end with the launcher, preload for ``device``, and cap torch at ``threads``."""
    import torch

    from securefl.runtime.preload import preload

    die_with_parent()
    if threads is not None:
        torch.set_num_threads(threads)
    preload(device)


def map_jobs(fn: Callable[..., Any], jobs: Sequence[tuple], *, workers: int, device: str = "cpu",
             threads: int | None = None, mp_context: Any = None,
             on_done: Callable[[Any, int, int], None] | None = None) -> list[Any]:
    """``fn(*job)`` for every job on ``workers`` processes (at most one per job), each started by
    :func:`start_worker`; the results in job order.

    ``on_done(result, done, total)`` is called in this process as each job ends. The
    first job error is raised here, after the other jobs are cancelled or ended.
    """
    # this process's unreachable objects are finalised here, not by a forked worker's collector:
    # there a SEAL context or a helper's threads of an earlier run would be torn down without the
    # threads that the fork did not copy, and a C++ destructor aborted a worker that way
    gc.collect()
    pool = ProcessPoolExecutor(max(1, min(workers, len(jobs))), mp_context=mp_context or worker_context(),
                               initializer=partial(start_worker, device, threads))
    try:
        with ctrl_c_stays_here():  # the workers start (at submit) without a SIGINT of their own
            futures = [pool.submit(fn, *job) for job in jobs]
        for done, future in enumerate(as_completed(futures), 1):
            result = future.result()  # the first failure stops the rest here
            if on_done is not None:
                on_done(result, done, len(futures))
        return [f.result() for f in futures]
    except BaseException:
        for worker in multiprocessing.active_children():  # the pool's workers: a benchmark starts no others
            worker.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # after an error: the queue is dropped, no worker is left


def worker_context() -> Any:
    """Spawn: a forked worker could inherit a lock held by one of this process's threads (torch's,
    a party's), or a CUDA context it cannot use."""
    return multiprocessing.get_context("spawn")


__all__ = ["map_jobs", "start_worker", "worker_context"]
