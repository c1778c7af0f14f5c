"""Multi-party PSI: one active party (label holder) and several passive parties.

The active party runs an ECDH exchange with each passive party over the same
singly-blinded values, intersects the results, fixes one order and tells every
passive party which of its own values are in the common intersection and where.

Messages, with A the active party, P each passive party, a and b their scalars:

1. A -> every P: [a]H(x) for A's IDs, sorted by value.
   P -> A: [b]H(y) for P's IDs, sorted by value.
2. P -> A: [b][a]H(x), 16-byte tags, in the order received.
   A computes [a][b]H(y) itself and keeps it: P never sees tags of its own IDs.
3. A -> P: for the common intersection in the final order, the positions of the
   matching values in the list P sent in step 1.

The final order is the order of the tags A shares with the first passive party,
a pseudorandom order unrelated to anyone's input rows.

What each party learns: A learns every passive party's set size and, for each
passive party, which of its own IDs that party also holds (the pairwise
intersections). A passive party learns A's set size and which of its own IDs are
in the common intersection of all parties, in the final order; nothing about
other passive parties, and nothing about A's other IDs (DDH).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Sequence

import numpy as np

from protocols.errors import InputError
from protocols.psi.curve import TAG_BYTES
from protocols.psi.ids import check_ids
from protocols.psi.parallel import Blinder
from protocols.psi.tags import check_positions, match, sort_order
from protocols.psi.twoparty import (PSIResult, blind_own, make_result, recv_singles, recv_tags,
                                    tag)
from protocols.transport import Transport


def _check_passive(transport: Transport, passive: Sequence[str]) -> list[str]:
    names = [passive] if isinstance(passive, str) else list(passive)
    if not names:
        raise InputError("psi_active needs at least one passive party")
    if len(set(names)) != len(names) or transport.name in names:
        raise InputError(f"passive parties must be distinct and not the active party {transport.name!r},"
                         f" got {names}")
    return names


def psi_active(transport: Transport, *, passive: Sequence[str], ids: Sequence[str],
               workers: int | None = None, round: int = 0,
               executor: Executor | None = None) -> PSIResult:
    """Role function of the active party: the common intersection with every passive party."""
    names = _check_passive(transport, passive)
    own = check_ids(ids, source=f"party {transport.name!r} IDs")
    # where[k, i]: position of own sorted value i in passive k's sorted list, or -1
    where = np.full((len(names), len(own)), -1, dtype=np.int64)
    sizes: dict[str, int] = {}
    first_tags = np.empty((len(own), TAG_BYTES), dtype=np.uint8)
    with Blinder(workers=workers, executor=executor) as blinder:
        order, singles = blind_own(own, blinder)
        transport.broadcast(names, tag(round, "singles"), points=singles)
        for k, name in enumerate(names):
            theirs = recv_singles(transport, name, round)
            sizes[name] = len(theirs)
            their_tags = blinder.blind(theirs, out_bytes=TAG_BYTES)
            own_tags = recv_tags(transport, name, round, rows=len(own))
            own_pos, their_pos = match(own_tags, their_tags)
            where[k, own_pos] = their_pos
            if k == 0:
                first_tags = own_tags
    common = np.flatnonzero((where >= 0).all(axis=0))
    common = common[sort_order(first_tags[common])]
    for k, name in enumerate(names):
        transport.send(name, tag(round, "rows"), rows=where[k, common])
    return make_result(own, order[common], sizes)


def psi_passive(transport: Transport, *, active: str, ids: Sequence[str],
                workers: int | None = None, round: int = 0,
                executor: Executor | None = None) -> PSIResult:
    """Role function of a passive party: which of its IDs are in the common intersection."""
    own = check_ids(ids, source=f"party {transport.name!r} IDs")
    with Blinder(workers=workers, executor=executor) as blinder:
        order, singles = blind_own(own, blinder)
        transport.send(active, tag(round, "singles"), points=singles)
        theirs = recv_singles(transport, active, round)
        transport.send(active, tag(round, "doubles"), tags=blinder.blind(theirs, out_bytes=TAG_BYTES))
    rows = check_positions(transport.recv(active, tag(round, "rows"))["rows"], bound=len(own),
                           what=f"intersection positions from {active!r}")
    return make_result(own, order[rows], {active: len(theirs)})


__all__ = ["psi_active", "psi_passive"]
