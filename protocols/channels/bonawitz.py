"""Pieces of the Bonawitz et al. (2017) protocol shared by its client and server roles.

Key derivation (every HKDF ``info`` names the round, both parties and both keys):

* pairwise mask seed of clients u, v: HKDF(DH(s_sk_u, s_pk_v)), the same for both;
  the lower roster index adds the mask, the higher subtracts it, so the pair cancels.
* share-encryption key from u to v: HKDF(DH(c_sk_u, c_pk_v)) with ``info`` ordered
  sender-then-recipient, so the two directions never share a key (and the nonce of
  their single message may be fixed at sequence 0).

Consistency rule: the server asks the survivors for shares with one list, the
survivors U3; each survivor reveals shares of the self-mask seed b_u for u in U3 and
of the pairwise key s_sk_u for u in U2 \\ U3 only (:func:`check_unmask_request`).
The two sets are disjoint by construction, so the server never gets both secrets of
one client -- which would unmask that client's input.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.channels import crypto
from protocols.channels.shamir import SHARE_BYTES, Share
from protocols.codec import Message, Tag
from protocols.errors import (CryptoError, DecodeError, DropoutError, InputError, PeerFailedError,
                              PeerTimeoutError, ProtocolError, TagMismatchError)
from protocols.transport.base import Transport

SEALED_SHARES_BYTES = 2 * SHARE_BYTES + crypto.TAG_BYTES
POLL_SECONDS = 0.01

T = TypeVar("T")


@dataclass(frozen=True)
class Roster:
    """The clients that advertised keys (U1), in index order, with their public keys."""

    names: tuple[str, ...]
    c_pks: tuple[bytes, ...]
    s_pks: tuple[bytes, ...]
    threshold: int

    def index(self, name: str) -> int:
        return self.names.index(name)

    def x(self, name: str) -> int:
        """The Shamir evaluation point of ``name`` (1-based roster index)."""
        return self.names.index(name) + 1

    def key_array(self, which: str) -> np.ndarray:
        keys = self.c_pks if which == "c" else self.s_pks
        return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), crypto.KEY_BYTES)


def pairwise_seed(s_sk: X25519PrivateKey, roster: Roster, me: str, other: str, round: int) -> bytes:
    """The mask seed ``me`` shares with ``other`` (also computable from ``other``'s key)."""
    lo, hi = sorted((me, other), key=roster.index)
    info = crypto.transcript("securefl/secagg/pairwise", round, lo, hi,
                             roster.s_pks[roster.index(lo)], roster.s_pks[roster.index(hi)])
    return crypto.hkdf_sha256(crypto.agree(s_sk, roster.s_pks[roster.index(other)]), info=info)


def mask_sign(roster: Roster, me: str, other: str) -> int:
    """+1 if ``me`` adds the pair's mask, -1 if it subtracts it."""
    return 1 if roster.index(me) < roster.index(other) else -1


def _share_key(c_sk: X25519PrivateKey, roster: Roster, round: int, sender: str, recipient: str,
               peer: str) -> bytes:
    info = crypto.transcript("securefl/secagg/share", round, sender, recipient,
                             roster.c_pks[roster.index(sender)], roster.c_pks[roster.index(recipient)])
    return crypto.hkdf_sha256(crypto.agree(c_sk, roster.c_pks[roster.index(peer)]), info=info)


def _share_ad(round: int, sender: str, recipient: str) -> bytes:
    return crypto.transcript("securefl/secagg/share-ad", round, sender, recipient)


def seal_shares(c_sk: X25519PrivateKey, roster: Roster, round: int, sender: str, recipient: str,
                b_share: Share, sk_share: Share) -> bytes:
    """Encrypt ``recipient``'s shares of ``sender``'s two secrets for relay through the server."""
    key = _share_key(c_sk, roster, round, sender, recipient, peer=recipient)
    return crypto.seal(key, 0, _share_ad(round, sender, recipient), b_share.y_bytes() + sk_share.y_bytes())


def open_shares(c_sk: X25519PrivateKey, roster: Roster, round: int, sender: str, recipient: str,
                sealed: bytes) -> tuple[Share, Share]:
    """Decrypt the shares ``sender`` sealed for ``recipient`` (CryptoError on any failure)."""
    key = _share_key(c_sk, roster, round, sender, recipient, peer=sender)
    plain = crypto.open_sealed(key, 0, _share_ad(round, sender, recipient), sealed)
    x = roster.x(recipient)
    try:
        return Share.from_bytes(x, plain[:SHARE_BYTES]), Share.from_bytes(x, plain[SHARE_BYTES:])
    except InputError:
        raise CryptoError(crypto.AUTH_FAILED) from None


def check_unmask_request(members: Sequence[str], survivors: Sequence[str], threshold: int) -> tuple[str, ...]:
    """Validate the server's survivor list U3 against U2; return the dropped clients U2 \\ U3.

    Refuses (ProtocolError) a list with unknown or repeated names or fewer than
    ``threshold`` names. Shares of b_u are then revealed for U3 and of s_sk_u for
    U2 \\ U3 only, never both for one client.
    """
    if len(set(survivors)) != len(survivors) or not set(survivors) <= set(members):
        raise ProtocolError("server's survivor list is not a set of clients that shared keys")
    if len(survivors) < threshold:
        raise ProtocolError(f"server asked to unmask {len(survivors)} survivors, below the"
                            f" threshold {threshold}")
    return tuple(m for m in members if m not in set(survivors))


def names_field(message: Message, field: str) -> tuple[str, ...]:
    """A field that must be a list of party names."""
    value = message[field]
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ProtocolError(f"field {field!r} from {message.src!r} is not a list of names")
    return tuple(value)


def array_field(message: Message, field: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A field that must be an array of exactly ``dtype`` and ``shape`` (-1 = any length)."""
    value = message[field]
    ok = isinstance(value, np.ndarray) and value.dtype == dtype and value.ndim == len(shape) \
        and all(want in (-1, got) for want, got in zip(shape, value.shape, strict=True))
    if not ok:
        raise ProtocolError(f"field {field!r} from {message.src!r} is not a {np.dtype(dtype).name}"
                            f" array of shape {shape}")
    return value


def share_rows(shares: Sequence[Share]) -> np.ndarray:
    """Shares' y values as a (k, SHARE_BYTES) uint8 array for the wire."""
    raw = b"".join(s.y_bytes() for s in shares)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(shares), SHARE_BYTES)


def well_formed(messages: dict[str, Message], members: Sequence[str], read: Callable[[Message], T]
                 ) -> dict[str, T]:
    """``read`` of each member's message; a member whose message it refuses is left out, as a silent one."""
    out: dict[str, T] = {}
    for member in members:
        if member in messages:
            try:
                out[member] = read(messages[member])
            except ProtocolError:  # DecodeError too: a missing field
                continue
    return out


def one_length(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inputs of the most common length (ties: the longest); the others are malformed."""
    lengths = Counter(len(y) for y in inputs.values())
    if not lengths:
        return {}
    length = max(lengths, key=lambda k: (lengths[k], k))
    return {u: y for u, y in inputs.items() if len(y) == length}


def summed(inputs: dict[str, np.ndarray], members: Sequence[str]) -> np.ndarray:
    """The members' inputs (of one length) added into a copy of the first, in place: no stacked
    n x L copy. Unsigned words wrap mod 2^64, as masks need."""
    total = inputs[members[0]].copy()
    for member in members[1:]:
        np.add(total, inputs[member], out=total)
    return total


def require_survivors(have: int, n: int, threshold: int, what: str, round: int) -> None:
    """Raise DropoutError when fewer than ``threshold`` clients remain."""
    if have < threshold:
        raise DropoutError(
            f"aggregation round {round}: only {have} of {n} clients {what}, fewer than the"
            f" threshold t={threshold}; a round survives at most n - t = {n - threshold} dropouts")


def collect(transport: Transport, senders: Sequence[str], tag: Tag,
            timeout: float) -> tuple[dict[str, Message], float]:
    """Receive ``tag`` from each sender until all arrived or ``timeout`` passed.

    A sender that has left (closed its transport, or its link broke) or sent a frame
    that does not decode counts as dropped at once, as one that stays silent until
    ``timeout`` does. Returns the messages that arrived and the seconds spent idle
    after the last arrival waiting for the rest (the cost of detecting dropouts).
    """
    start = time.monotonic()
    deadline, last = start + timeout, start
    pending, got = list(senders), {}
    while pending:
        for name in list(pending):
            if _try_recv(transport, name, tag, 0.0, got) is not None:
                pending.remove(name)
                last = time.monotonic() if name in got else last
        remaining = deadline - time.monotonic()
        if not pending or remaining <= 0:
            break
        if _try_recv(transport, pending[0], tag, min(remaining, POLL_SECONDS), got) is not None:
            last = time.monotonic() if pending[0] in got else last
            pending.pop(0)
    return got, (time.monotonic() - last if pending else 0.0)


def _try_recv(transport: Transport, src: str, tag: Tag, timeout: float,
              into: dict[str, Message]) -> bool | None:
    """True: ``src``'s message arrived (in ``into``); False: ``src`` has left; None: not yet."""
    try:
        into[src] = transport.recv(src, tag, timeout=timeout)
    except PeerTimeoutError:
        return None
    except (PeerFailedError, DecodeError, TagMismatchError):  # left, or sent a frame that is not a message
        return False
    return True
