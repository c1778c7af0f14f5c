"""intra_op_threads: overlapping party threads leave the process's BLAS limit as they found it."""

import threading

from threadpoolctl import threadpool_info

from securefl.runtime.threads import intra_op_threads


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_overlapping_parties_that_leave_first_in_first_out_restore_the_blas_limit():
    # Arrange: a run in this thread first (it must not keep control of the limit), then
    # A enters, B enters, A leaves, B leaves (the order that used to strand the limit at 1)
    with intra_op_threads(1):
        pass
    before = _blas_threads()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def party_a():
        with intra_op_threads(1):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def party_b():
        a_in.wait(10)
        with intra_op_threads(1):
            b_in.set()
            a_out.wait(10)
            seen["while_b_runs"] = _blas_threads()

    # Act
    threads = [threading.Thread(target=party_a), threading.Thread(target=party_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    # Assert: B kept its one thread after A left, and the original limit came back after both
    assert seen["while_b_runs"] == [1] * len(before)
    assert _blas_threads() == before
