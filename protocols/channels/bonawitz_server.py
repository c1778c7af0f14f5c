"""The server role of secure aggregation (Bonawitz et al. 2017, semi-honest version).

The server relays keys and sealed shares, sums the masked inputs of the survivors
U3, asks U3 for the shares that remove the masks -- self-mask seeds b_u of U3 and
pairwise keys s_sk_u of the clients that shared keys but sent no input (U2 \\ U3) --
and learns only the sum. Each stage waits ``config.stage_timeout`` seconds at most;
a client that sent nothing by then, or that has left (closed its transport), counts
as dropped, and what the server would send it is skipped. Fewer than t clients left at
any stage is a :class:`~protocols.errors.DropoutError`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from protocols.channels import crypto, fixedpoint, prg, shamir
from protocols.channels.bonawitz import (SEALED_SHARES_BYTES, Roster, array_field, collect, mask_sign,
                                         names_field, pairwise_seed, require_survivors)
from protocols.channels.config import SecAggConfig, SecAggResult, secagg_tag
from protocols.codec import Message
from protocols.errors import CryptoError, InputError, ProtocolError
from protocols.transport.base import Transport, send_to_present


def secure_server(transport: Transport, *, clients: Sequence[str], config: SecAggConfig,
                  round: int) -> SecAggResult:
    """Run one masked round with ``clients``; return the sum over the survivors."""
    clients = tuple(clients)
    n, t, timeout = len(clients), config.threshold_for(len(clients)), config.stage_timeout
    ads, wait = collect(transport, clients, secagg_tag(round, "advertise"), timeout)
    u1 = [c for c in clients if c in ads]
    require_survivors(len(u1), n, t, "advertised keys", round)
    roster = _roster(u1, ads, t)
    send_to_present(transport, clients, secagg_tag(round, "roster"), names=u1, c_pks=roster.key_array("c"),
                    s_pks=roster.key_array("s"), threshold=t, n_clients=n)

    shares, waited = collect(transport, u1, secagg_tag(round, "shares"), timeout)
    wait += waited
    u2 = [c for c in u1 if c in shares]
    require_survivors(len(u2), n, t, "shared their keys", round)
    _relay_shares(transport, roster, shares, u2, round)

    masked, waited = collect(transport, u2, secagg_tag(round, "masked"), timeout)
    wait += waited
    u3 = [c for c in u2 if c in masked]
    require_survivors(len(u3), n, t, "sent a masked input", round)
    total = _sum_masked(masked, u3)
    send_to_present(transport, u2, secagg_tag(round, "unmask"), survivors=u3)

    reveals, waited = collect(transport, u3, secagg_tag(round, "reveal"), timeout)
    wait += waited
    u4 = [c for c in u3 if c in reveals]
    require_survivors(len(u4), n, t, "answered the unmasking request", round)
    dropped = [c for c in u2 if c not in u3]
    _unmask(total, roster, {v: reveals[v] for v in u4[:t]}, u3, dropped, round, config.prg)
    return SecAggResult(vector=fixedpoint.decode(total, scale_bits=config.scale_bits),
                        survivors=tuple(u3), dropped=tuple(c for c in clients if c not in u3),
                        threshold=t, secure=True, wait_seconds=wait)


def _roster(u1: list[str], ads: dict[str, Message], threshold: int) -> Roster:
    keys = {}
    for c in u1:
        c_pk, s_pk = ads[c]["c_pk"], ads[c]["s_pk"]
        if not all(isinstance(k, bytes) and len(k) == crypto.KEY_BYTES for k in (c_pk, s_pk)):
            raise ProtocolError(f"client {c!r} advertised malformed public keys")
        keys[c] = (c_pk, s_pk)
    return Roster(names=tuple(u1), c_pks=tuple(keys[c][0] for c in u1),
                  s_pks=tuple(keys[c][1] for c in u1), threshold=threshold)


def _relay_shares(transport: Transport, roster: Roster, shares: dict[str, Message], u2: list[str],
                  round: int) -> None:
    """Forward to every client of U1 the sealed shares addressed to it by the members of U2."""
    rows: dict[str, dict[str, np.ndarray]] = {}
    for u in u2:
        to = names_field(shares[u], "to")
        if to != tuple(v for v in roster.names if v != u):
            raise ProtocolError(f"client {u!r} sealed shares for the wrong set of clients")
        ct = array_field(shares[u], "ct", np.uint8, (len(to), SEALED_SHARES_BYTES))
        rows[u] = dict(zip(to, ct, strict=True))
    for v in roster.names:
        senders = [u for u in u2 if u != v]
        stacked = np.stack([rows[u][v] for u in senders]) if senders \
            else np.zeros((0, SEALED_SHARES_BYTES), np.uint8)
        send_to_present(transport, [v], secagg_tag(round, "inbox"), members=u2, ct=stacked, **{"from": senders})


def _sum_masked(masked: dict[str, Message], u3: list[str]) -> np.ndarray:
    """The wrapping uint64 sum of the survivors' masked inputs (all of one length)."""
    total: np.ndarray | None = None
    for u in u3:
        y = array_field(masked[u], "y", np.uint64, (-1,) if total is None else total.shape)
        if total is None:
            total = y.copy()
        else:
            np.add(total, y, out=total)
    if total is None:
        raise ProtocolError("no masked inputs to sum")
    return total


def _unmask(total: np.ndarray, roster: Roster, reveals: dict[str, Message], u3: list[str],
            dropped: list[str], round: int, prg_name: str) -> None:
    """Reconstruct b_u (u in U3) and s_sk_u (u dropped) from t responders; remove their masks."""
    t = roster.threshold
    masks = prg.MaskAccumulator(total, prg_name)
    b_shares = _revealed(roster, reveals, "b_of", "b_shares", u3)
    sk_shares = _revealed(roster, reveals, "sk_of", "sk_shares", dropped)
    for u in u3:
        b_seed = shamir.reconstruct(b_shares[u], threshold=t, length=crypto.SEED_BYTES)
        masks.add(b_seed, -1)
    for u in dropped:
        s_sk = crypto.load_private(shamir.reconstruct(sk_shares[u], threshold=t, length=crypto.KEY_BYTES))
        if crypto.public_bytes(s_sk) != roster.s_pks[roster.index(u)]:
            raise CryptoError("shares do not reconstruct a valid secret")
        for v in u3:
            masks.add(pairwise_seed(s_sk, roster, u, v, round), -mask_sign(roster, v, u))


def _revealed(roster: Roster, reveals: dict[str, Message], names_key: str, rows_key: str,
              expected: list[str]) -> dict[str, list[shamir.Share]]:
    """Each expected client's shares, one per responder, checked against the request."""
    out: dict[str, list[shamir.Share]] = {u: [] for u in expected}
    for v, message in reveals.items():
        if names_field(message, names_key) != tuple(expected):
            raise ProtocolError(f"client {v!r} revealed shares for other clients than requested")
        rows = array_field(message, rows_key, np.uint8, (len(expected), shamir.SHARE_BYTES))
        for u, row in zip(expected, rows, strict=True):
            try:
                out[u].append(shamir.Share.from_bytes(roster.x(v), row.tobytes()))
            except InputError:
                raise ProtocolError(f"client {v!r} revealed a malformed share") from None
    return out
