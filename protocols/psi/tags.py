"""Array work on blinded values: validating what a peer sent, sorting and matching.

Blinded values are rows of a uint8 array. Viewed as fixed-width byte strings
(numpy ``S`` dtype) they compare exactly like ``memcmp``, so numpy sorts and
intersects them in C without a Python object per element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.errors import ProtocolError


def as_keys(rows: np.ndarray) -> np.ndarray:
    """A 1-D view of (n, w) uint8 rows as w-byte strings that sort in byte order."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    return rows.view(f"S{rows.shape[1]}").reshape(len(rows))


def sort_order(rows: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``rows`` by their bytes."""
    return np.argsort(as_keys(rows), kind="stable")


def check_rows(value: Any, *, width: int, rows: int | None, what: str) -> np.ndarray:
    """``value`` if it is a uint8 array of shape (rows, width), else :class:`ProtocolError`."""
    if not isinstance(value, np.ndarray):
        raise ProtocolError(f"{what}: expected a uint8 array, got {type(value).__name__}")
    if value.dtype != np.uint8 or value.ndim != 2 or value.shape[1] != width:
        raise ProtocolError(f"{what}: expected uint8 rows of {width} bytes, got {value.dtype}"
                            f" of shape {list(value.shape)}")
    if rows is not None and value.shape[0] != rows:
        raise ProtocolError(f"{what}: expected {rows} rows, got {value.shape[0]}")
    return value


def check_canonical(points: np.ndarray, *, what: str) -> None:
    """Raise :class:`ProtocolError` unless every point is a canonical u-coordinate (u < 2^255 - 19).

    X25519 ignores the top bit and reduces mod p, so a non-canonical encoding would
    be a second name for a point; honest parties only send X25519 outputs, which are
    canonical.
    """
    top = points[:, 31]
    near_p = points[top == 0x7F]  # only these can lie in [p, 2^255)
    above_p = np.all(near_p[:, 1:31] == 0xFF, axis=1) & (near_p[:, 0] >= 0xED)
    if bool(np.any(top >= 0x80)) or bool(np.any(above_p)):
        raise ProtocolError(f"{what}: values are not canonical curve25519 u-coordinates")


def check_ascending(rows: np.ndarray, *, what: str) -> None:
    """Raise :class:`ProtocolError` unless the rows are strictly increasing (sorted, distinct)."""
    keys = as_keys(rows)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        raise ProtocolError(f"{what}: values are not sorted and distinct, as the protocol requires")


def check_positions(value: Any, *, bound: int, what: str) -> np.ndarray:
    """``value`` as int64 positions if it is a 1-D array of distinct ints in [0, bound)."""
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.dtype.kind not in "iu":
        raise ProtocolError(f"{what}: expected a 1-D integer array")
    positions = value.astype(np.int64)
    if len(positions) and (positions.min() < 0 or positions.max() >= bound):
        raise ProtocolError(f"{what}: positions out of range [0, {bound})")
    if len(np.unique(positions)) != len(positions):
        raise ProtocolError(f"{what}: positions repeat")
    return positions


def match(own: np.ndarray, peer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``own`` and ``peer`` (rows of tags) of the common tags, sorted by tag.

    Both arrays must hold distinct tags (checked: a repeat means a malformed peer,
    or a truncation collision, which has probability about n^2 / 2^129).
    """
    own_order, own_sorted = _sorted_distinct(own, "our")
    peer_order, peer_sorted = _sorted_distinct(peer, "the peer's")
    if not len(own_sorted) or not len(peer_sorted):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    at = np.minimum(np.searchsorted(own_sorted, peer_sorted), len(own_sorted) - 1)
    hit = own_sorted[at] == peer_sorted
    return own_order[at[hit]].astype(np.int64), peer_order[hit].astype(np.int64)


def _sorted_distinct(rows: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    keys = as_keys(rows)
    order = np.argsort(keys)
    ordered = keys[order]
    if len(ordered) > 1 and not bool(np.all(ordered[1:] != ordered[:-1])):
        raise ProtocolError(f"{name} doubly-blinded values repeat; the peer's messages are malformed")
    return order, ordered
