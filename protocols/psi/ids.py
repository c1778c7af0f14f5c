"""Checking a party's IDs before they enter PSI.

IDs are compared as exact strings: their UTF-8 bytes, with no trimming, no case
folding and no Unicode normalisation. So ``"1"``, ``"01"`` and ``"1.0"`` are three
different IDs, as are ``"a"``, ``" a"`` and ``"a "``, and ``"é"`` written as one code
point differs from ``"e"`` followed by a combining accent. Normalise IDs before PSI
if your parties write them differently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from protocols.errors import DuplicateIDError, InputError

_EXAMPLES = 3


def check_ids(ids: Iterable[Any], *, source: str) -> list[str]:
    """Return ``ids`` as a list of str, or raise an error naming ``source``.

    Raises :class:`InputError` for a non-str ID (or a single str or bytes passed
    instead of a sequence) and for text that is not valid Unicode (lone surrogates),
    and :class:`DuplicateIDError` when an ID appears more than once.
    """
    if isinstance(ids, (str, bytes, bytearray)):
        raise InputError(f"{source}: IDs must be a sequence of str, got a single {type(ids).__name__}")
    try:
        values = list(ids)
    except TypeError:
        raise InputError(f"{source}: IDs must be a sequence of str, got {type(ids).__name__}") from None
    values = _as_str(values, source)
    _check_unicode(values, source)
    _check_unique(values, source)
    return values


def _as_str(values: list[Any], source: str) -> list[str]:
    """Plain str for every value; str subclasses (e.g. numpy.str_) become str."""
    if all(type(v) is str for v in values):
        return values
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise InputError(f"{source}: ID at position {index} is {type(value).__name__} {value!r}, not str;"
                             " convert IDs to strings explicitly (PSI compares exact strings)")
    return [str.__str__(v) for v in values]


def _check_unicode(values: list[str], source: str) -> None:
    try:
        "".join(values).encode("utf-8")
    except UnicodeEncodeError:
        for index, value in enumerate(values):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(f"{source}: ID at position {index} ({value!r}) is not valid Unicode:"
                                 f" {exc.reason}") from None


def _check_unique(values: list[str], source: str) -> None:
    distinct = len(set(values))
    if distinct == len(values):
        return
    counts = Counter(values)
    repeated = [(v, c) for v, c in counts.items() if c > 1]
    extra = len(values) - distinct
    examples = ", ".join(f"{v!r} x{c}" for v, c in repeated[:_EXAMPLES])
    more = f" and {len(repeated) - _EXAMPLES} more" if len(repeated) > _EXAMPLES else ""
    raise DuplicateIDError(
        f"{source}: {extra} duplicate ID{'s' if extra != 1 else ''} ({len(repeated)} distinct"
        f" value{'s' if len(repeated) != 1 else ''} repeated; {len(values)} rows): {examples}{more};"
        " every ID must appear once")
