"""Small value checks shared by the configs of every layer (securefl's build on these too)."""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool) of finite size; an int too large for a
    float (10**400) is not, where ``math.isfinite`` would raise OverflowError on it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


__all__ = ["finite_number"]
