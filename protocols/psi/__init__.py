"""Private set intersection: ECDH over Curve25519 (X25519), semi-honest.

Two parties call :func:`psi_two_party`; an active party and its passive parties
call :func:`psi_active` and :func:`psi_passive`. Every party ends with the common
IDs in one agreed order, as a :class:`PSIResult` of positions into its own IDs.
:func:`intersect` runs two parties in this process; :func:`check_ids` validates a
party's IDs (exact strings, no duplicates). See :mod:`protocols.psi.twoparty` and
:mod:`protocols.psi.multiparty` for the messages and what each party learns, and
:mod:`protocols.psi.curve` for hashing to the curve.
"""

from protocols.psi.curve import hash_to_curve, multiplier
from protocols.psi.ids import check_ids
from protocols.psi.multiparty import psi_active, psi_passive
from protocols.psi.parallel import Blinder, make_pool
from protocols.psi.twoparty import PSIResult, intersect, psi_two_party

__all__ = [
    "Blinder",
    "PSIResult",
    "check_ids",
    "hash_to_curve",
    "intersect",
    "make_pool",
    "multiplier",
    "psi_active",
    "psi_passive",
    "psi_two_party",
]
