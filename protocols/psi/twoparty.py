"""Two-party ECDH PSI (semi-honest), and the pieces the multi-party roles share.

Both parties run :func:`psi_two_party`. With H the hash to curve and a, b the two
secret scalars:

1. each party sends its singly-blinded values [a]H(x), sorted by value (the sort
   hides the order of its input rows);
2. each party blinds the values it received, [b][a]H(x) = [ab]H(x), keeps the
   first 16 bytes ("tags") and returns them in the order it received them;
3. so each party holds the tags of both sets: its own (returned by the peer) and
   the peer's (computed itself). Equal tags are common IDs. Both parties order the
   intersection by tag value, so their rows line up, e.g. for vertical training.

What each party learns: the other set's size and the intersection; the peer's
other values are pseudorandom under the decisional Diffie-Hellman assumption.
Truncating tags to 16 bytes halves the second message; a false match needs a
128-bit collision (probability about n*m / 2^128; a collision within one set,
about n^2 / 2^129, is reported as a ProtocolError).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from protocols.codec import Tag
from protocols.psi.curve import POINT_BYTES, TAG_BYTES
from protocols.psi.ids import check_ids
from protocols.psi.parallel import MIN_PARALLEL, Blinder, make_pool, resolve_workers
from protocols.psi.tags import check_ascending, check_canonical, check_rows, match, sort_order
from protocols.transport import DEFAULT_TIMEOUT, RunResult, Transport, run_parties

STAGE = "psi"
SECONDS_PER_ITEM = 2e-4  # generous: intersect() waits this long per ID on top of the default


@dataclass(frozen=True, eq=False)
class PSIResult:
    """One party's view of the intersection.

    ``indices`` are positions into this party's own ``ids`` in the agreed order
    (the same order at every party); ``ids`` are those IDs in that order;
    ``peer_sizes`` the set sizes this party learned.
    """

    indices: np.ndarray
    ids: list[str]
    size: int
    peer_sizes: dict[str, int] = field(default_factory=dict)


def make_result(ids: list[str], indices: np.ndarray, peer_sizes: dict[str, int]) -> PSIResult:
    """A :class:`PSIResult` for rows ``indices`` of ``ids`` (indices are copied, read-only)."""
    indices = np.array(indices, dtype=np.int64)
    indices.setflags(write=False)
    return PSIResult(indices=indices, ids=[ids[i] for i in indices], size=len(indices),
                     peer_sizes=dict(peer_sizes))


def tag(round: int, name: str) -> Tag:
    return Tag(round, STAGE, name)


def blind_own(ids: list[str], blinder: Blinder) -> tuple[np.ndarray, np.ndarray]:
    """This party's singly-blinded values sorted by value, and the input rows in that order."""
    singles = blinder.hash_and_blind(ids)
    order = sort_order(singles)
    return order, singles[order]


def recv_singles(transport: Transport, src: str, round: int) -> np.ndarray:
    """The peer's singly-blinded values, checked: canonical 32-byte points, sorted and distinct."""
    what = f"singly-blinded values from {src!r}"
    points = check_rows(transport.recv(src, tag(round, "singles"))["points"], width=POINT_BYTES,
                        rows=None, what=what)
    check_canonical(points, what=what)
    check_ascending(points, what=what)
    return points


def recv_tags(transport: Transport, src: str, round: int, rows: int) -> np.ndarray:
    """Our values blinded by ``src``: exactly one 16-byte tag per value we sent."""
    return check_rows(transport.recv(src, tag(round, "doubles"))["tags"], width=TAG_BYTES, rows=rows,
                      what=f"doubly-blinded values from {src!r}")


def psi_two_party(transport: Transport, *, peer: str, ids: Sequence[str], workers: int | None = None,
                  round: int = 0, executor: Executor | None = None) -> PSIResult:
    """Role function: intersect ``ids`` with ``peer``'s; both parties call this.

    Both parties get the intersection ordered by doubly-blinded value. ``workers``
    processes blind the values (None: all cores; 0: in this thread); ``executor``
    replaces them with a pool the caller owns. ``round`` goes into the message tags.
    """
    own = check_ids(ids, source=f"party {transport.name!r} IDs")
    with Blinder(workers=workers, executor=executor) as blinder:
        order, singles = blind_own(own, blinder)
        transport.send(peer, tag(round, "singles"), points=singles)
        theirs = recv_singles(transport, peer, round)
        their_tags = blinder.blind(theirs, out_bytes=TAG_BYTES)
        transport.send(peer, tag(round, "doubles"), tags=their_tags)
    own_tags = recv_tags(transport, peer, round, rows=len(own))
    own_pos, _ = match(own_tags, their_tags)
    return make_result(own, order[own_pos], {peer: len(theirs)})


def intersect(left_ids: Sequence[str], right_ids: Sequence[str], *, workers: int | None = None,
              timeout: float | None = None) -> tuple[PSIResult, PSIResult, RunResult]:
    """Run two-party PSI between parties "left" and "right" in this process.

    Both parties share one pool of ``workers`` processes (default: all cores), so
    the run never starts more processes than that; this simulation convenience puts
    both secret scalars in the same workers, where a deployment gives each party its
    own. ``timeout`` is how long a party waits for a message (default: grows with the
    set sizes).
    """
    left_ids, right_ids = check_ids(left_ids, source="left_ids"), check_ids(right_ids, source="right_ids")
    n = len(left_ids) + len(right_ids)
    count = resolve_workers(workers)
    wait = timeout if timeout is not None else DEFAULT_TIMEOUT + SECONDS_PER_ITEM * n
    pool = make_pool(count) if count > 0 and max(len(left_ids), len(right_ids)) >= MIN_PARALLEL else None
    try:
        kw = {"workers": count, "executor": pool}
        run = run_parties({"left": psi_two_party, "right": psi_two_party}, timeout=wait,
                          kwargs={"left": {"peer": "right", "ids": left_ids, **kw},
                                  "right": {"peer": "left", "ids": right_ids, **kw}})
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return run.results["left"], run.results["right"], run


__all__ = ["PSIResult", "intersect", "psi_two_party"]
