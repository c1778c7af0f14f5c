"""The statistics every benchmark's summary shares: sample std, 95% interval, the "mean ± std" cell.

One value has no spread: its std is nan (``null`` once written as JSON), never 0, and
its cell reads "mean (n=1)". Files written before this rule stored 0 for one value;
the count decides how a cell reads, so they render the same way.
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence


def sample_std(values: Sequence[float]) -> float:
    """The sample std (n - 1) of ``values``; nan for fewer than two, which have no spread."""
    return statistics.stdev(values) if len(values) > 1 else math.nan


def ci95_half_width(std: float | None, n: int) -> float:
    """The t-based 95% confidence half-width of a mean over ``n`` values with sample std ``std``
    (nan for one value, which has no interval)."""
    if n < 2 or std is None:
        return math.nan
    from scipy import stats  # here: scipy is slow to import

    return float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)


def mean_std(mean: float, std: float | None, n: int, *, digits: int, scale: float = 1.0, count: bool = True) -> str:
    """``mean ± std (n=N)`` with ``digits`` decimals after multiplying by ``scale``; ``mean (n=1)`` for
    one value; ``count=False`` drops the ``(n=N)`` where the table names the count elsewhere."""
    text = f"{scale * mean:.{digits}f}"
    if n < 2 or std is None or math.isnan(std):
        return f"{text} (n={n})"
    return f"{text} ± {scale * std:.{digits}f}" + (f" (n={n})" if count else "")


def error_bar(std: float | None) -> float:
    """``std`` as a plot's error bar: 0 where one value (nan or a stored null) has none to draw."""
    return 0.0 if std is None or math.isnan(std) else std
