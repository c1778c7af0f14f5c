"""Field checks shared by the algorithm and baseline configs.

Each raises :class:`~protocols.errors.InputError` with one line naming the config
class and the field (``"GLConfig.epochs must be a positive int, got 0"``), so a bad
setting from the CLI or from code reads the same everywhere.
"""

from __future__ import annotations

from typing import Any

from protocols.checks import finite_number
from protocols.errors import InputError

DEVICE_KINDS = ("cpu", "cuda")


def _is_number(value: Any) -> bool:
    return finite_number(value)


MAX_COUNT = 2**31 - 1
"""The largest count (epochs, rounds, batch size, width) a config takes: torch's int64 indexing
overflows well past it, and no run needs more."""


def positive_int(owner: str, name: str, value: Any, *, optional: bool = False) -> None:
    """``value`` is an int in [1, MAX_COUNT] (or None when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        cap = f" (at most {MAX_COUNT})" if isinstance(value, int) and value > MAX_COUNT else ""
        raise InputError(f"{owner}.{name} must be a positive int{' or None' if optional else ''}{cap}, got {value!r}")


def positive_number(owner: str, name: str, value: Any) -> None:
    """``value`` is a finite number > 0."""
    if not _is_number(value) or value <= 0:
        raise InputError(f"{owner}.{name} must be a positive finite number, got {value!r}")


def non_negative_number(owner: str, name: str, value: Any) -> None:
    """``value`` is a finite number >= 0."""
    if not _is_number(value) or value < 0:
        raise InputError(f"{owner}.{name} must be a finite number >= 0, got {value!r}")


def number_in(owner: str, name: str, value: Any, low: float, high: float, *, open_low: bool = False) -> None:
    """``value`` is a finite number in [low, high] (or (low, high] when ``open_low``)."""
    if not _is_number(value) or value > high or value < low or (open_low and value == low):
        raise InputError(f"{owner}.{name} must be a number in {'(' if open_low else '['}{low}, {high}],"
                         f" got {value!r}")


def peer_timeout(value: float) -> None:
    """A command's ``--timeout``: seconds to wait for a peer, positive and at most 1e6 (NaN and inf fail)."""
    if not 0 < value <= 1e6:
        raise InputError(f"--timeout must be a positive number of seconds (at most 1e6), got {value}")


def seed(owner: str, value: Any, *, name: str = "seed") -> None:
    """``value`` is a run seed: an int in [0, 2**63)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise InputError(f"{owner}.{name} must be a non-negative int below 2**63, got {value!r}")


def device(owner: str, value: Any) -> None:
    """``value`` names a torch device this project runs on: 'cpu', 'cuda' or 'cuda:N'."""
    if not isinstance(value, str) or value.split(":")[0] not in DEVICE_KINDS:
        raise InputError(f"{owner}.device must be 'cpu', 'cuda' or 'cuda:N', got {value!r}")


def flag(owner: str, name: str, value: Any) -> None:
    """``value`` is a bool (not merely truthy)."""
    if not isinstance(value, bool):
        raise InputError(f"{owner}.{name} must be a bool, got {value!r}")


def callback(owner: str, name: str, value: Any) -> None:
    """``value`` is None or a callable ``(epoch, total)`` progress hook."""
    if value is not None and not callable(value):
        raise InputError(f"{owner}.{name} must be callable(epoch, total) or None, got {type(value).__name__}")


__all__ = ["MAX_COUNT", "callback", "device", "flag", "non_negative_number", "number_in", "peer_timeout",
           "positive_int", "positive_number", "seed"]
