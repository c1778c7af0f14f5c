"""benchmarks.pool: jobs over worker processes that one Ctrl-C (or one failed job) stops."""

import multiprocessing
import signal
import time

import pytest

from benchmarks.common import run_main
from benchmarks.pool import map_jobs


def square(x: int) -> int:
    return x * x


def sigint_blocked() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def fail_or_sleep(seconds: float) -> float:
    if seconds == 0:
        raise ValueError("job failed on purpose")
    time.sleep(seconds)
    return seconds


def test_results_come_in_job_order_and_each_end_is_reported():
    seen: list[tuple[int, int, int]] = []

    out = map_jobs(square, [(n,) for n in range(6)], workers=2,
                   on_done=lambda r, done, total: seen.append((r, done, total)))

    assert out == [0, 1, 4, 9, 16, 25]
    assert sorted(r for r, _, _ in seen) == out and [d for _, d, _ in seen] == list(range(1, 7))
    assert {t for _, _, t in seen} == {6}


def test_workers_leave_ctrl_c_to_the_benchmark():
    assert map_jobs(sigint_blocked, [(), ()], workers=2) == [True, True]
    assert not sigint_blocked()  # the caller's own block is lifted again


def test_a_failed_job_ends_the_others_instead_of_waiting_for_them():
    # Arrange: one job fails at once; the others would sleep for a minute each
    jobs = [(0,), (60,), (60,), (60,)]
    start = time.monotonic()
    # Act
    with pytest.raises(ValueError, match="on purpose"):
        map_jobs(fail_or_sleep, jobs, workers=2)
    # Assert: neither the running sleeper nor the queued ones were awaited
    assert time.monotonic() - start < 30


def test_ctrl_c_in_a_benchmark_is_one_line_and_status_130(capsys):
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_main(interrupted, "benchmarks.x") == 130
    assert capsys.readouterr().err == "benchmarks.x: interrupted; no result file was written\n"
    assert run_main(lambda: 3, "benchmarks.x") == 3


def test_bad_input_found_inside_a_benchmark_is_one_line_and_status_2(capsys):
    from protocols.errors import InputError

    def refused() -> int:
        raise InputError("GLConfig.batches must be a positive int, got 0")

    assert run_main(refused, "benchmarks.x") == 2
    assert capsys.readouterr().err == "benchmarks.x: error: GLConfig.batches must be a positive int, got 0\n"


def test_no_more_workers_start_than_there_are_jobs(monkeypatch):
    # Arrange: record the pool size map_jobs asks for
    import benchmarks.pool

    sizes = []
    real = benchmarks.pool.ProcessPoolExecutor

    def recording(workers, **kwargs):
        sizes.append(workers)
        return real(workers, **kwargs)

    monkeypatch.setattr(benchmarks.pool, "ProcessPoolExecutor", recording)
    # Act
    out = map_jobs(square, [(3,), (4,)], workers=64)
    # Assert
    assert out == [9, 16] and sizes == [2]


def start_method() -> str:
    import multiprocessing

    return multiprocessing.get_start_method()


def test_workers_start_by_spawn_so_no_lock_of_this_process_comes_along():
    # Act
    methods = map_jobs(start_method, [()], workers=1)
    # Assert: a fresh interpreter, not a fork of this (multi-threaded, perhaps CUDA-using) process
    assert methods == ["spawn"]


def optimizer_stack_loaded() -> bool:
    import sys

    return "torch._dynamo" in sys.modules


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def test_a_spawned_worker_loads_what_a_first_run_would_load_before_its_first_job():
    # Arrange: a spawned process starts bare (as on a GPU host); the control shows that it does
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as bare:
        control = bare.submit(optimizer_stack_loaded).result()
    # Act
    loaded = map_jobs(optimizer_stack_loaded, [()], workers=1, mp_context=spawn)
    # Assert: torch's first optimizer would have imported its compiler stack inside the job's clock
    assert (control, loaded) == (False, [True])


def test_workers_cap_torch_threads_when_asked():
    assert map_jobs(torch_threads, [(), ()], workers=2, threads=1) == [1, 1]


class _Finalised:
    """A reference cycle whose finaliser records the process that ran it."""

    def __init__(self, path) -> None:
        self.path, self.me = path, self

    def __del__(self) -> None:
        import os

        with open(self.path, "a") as fh:
            fh.write(f"{os.getpid()}\n")


def collect_garbage() -> bool:
    import gc

    gc.collect()
    return True


def test_garbage_of_this_process_is_finalised_here_not_in_a_forked_worker(tmp_path):
    # Arrange: an unreachable cycle (a SEAL context's, in the case that aborted a worker); the
    # collector off, so that nothing but map_jobs' own collection runs before the fork
    import gc
    import os

    record = tmp_path / "finalised"
    gc.disable()
    try:
        _Finalised(record)
        # Act: the worker collects its garbage, as any run in it may
        out = map_jobs(collect_garbage, [()], workers=1, mp_context=multiprocessing.get_context("fork"))
    finally:
        gc.enable()
    # Assert: finalised once, by this process
    assert out == [True] and record.read_text().split() == [str(os.getpid())]
