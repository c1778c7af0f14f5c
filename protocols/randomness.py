"""Uniform floats straight from the OS, for every value that must hide something.

Masks, noise and secret shares are drawn here, never from a seeded generator: a
generator seeded with 64 OS bits would make a share one of 2^64 candidates, which a
peer holding one equation in it could test one by one.
"""

from __future__ import annotations

import math
import os

import numpy as np


def os_uniform(radius: float, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform floats in [-radius, radius) with 53 bits each from os.urandom (never seeded)."""
    count = math.prod(shape)
    raw = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    return ((raw.astype(np.float64) / 2.0 ** 52 - 1.0) * radius).reshape(shape)


__all__ = ["os_uniform"]
