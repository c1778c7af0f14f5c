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

from contextlib import contextmanager
from typing import Iterator

import torch
from threadpoolctl import threadpool_limits


@contextmanager
def intra_op_threads(threads: int | None) -> Iterator[None]:
    """Run the body with ``threads`` torch intra-op and BLAS threads, then restore (None: as is)."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


__all__ = ["intra_op_threads"]
