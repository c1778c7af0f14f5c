"""Same seed, same numbers: ask MKL for run-to-run reproducible results.

torch's CPU matrix products go to MKL, whose kernels choose a code path by where
their operands lie in memory and so may sum in another order from one run to the
next. Small differences grow over 100 epochs: four runs of STFL on payment with one
seed gave accuracies from 0.7970 to 0.7983 on this project's 2-core machine. With
``MKL_CBWR=AUTO,STRICT`` (MKL's conditional numerical reproducibility) three runs
gave 0.79767 each, bit for bit, at no cost that we could measure. The results then
repeat on one machine. Another instruction set may still give other last bits.

MKL reads the variable once, at its first call, so :func:`reproducible_blas` must run
before any matrix product in the process; the processes a run starts inherit it. The
``securefl`` command and every benchmark call it first. A script using the library
should call it at its start, or set ``MKL_CBWR`` itself.
"""

from __future__ import annotations

import os

ENV = "MKL_CBWR"
SETTING = "AUTO,STRICT"


def reproducible_blas() -> str:
    """Set ``MKL_CBWR`` to :data:`SETTING` unless it is set already; the value in force."""
    return os.environ.setdefault(ENV, SETTING)


__all__ = ["ENV", "SETTING", "reproducible_blas"]
