"""The server role of secure aggregation (Bonawitz et al. 2017, semi-honest version).

The server relays keys and sealed shares, sums the masked inputs of the survivors
U3, asks U3 for the shares that remove the masks -- self-mask seeds b_u of U3 and
pairwise keys s_sk_u of the clients that shared keys but sent no input (U2 \\ U3) --
and learns only the sum. The roster tells the clients the round's threshold,
``scale_bits`` and ``prg``, which they check against their own config. Each stage
waits ``config.stage_timeout`` seconds at most (the clients wait twice as long for
the server, :attr:`SecAggConfig.client_wait`); a client that sent nothing by then,
that has left (closed its transport), or whose message is malformed (a frame that
does not decode, or fields of the wrong kind or size, or a public key that key
agreement refuses) counts as dropped, and what the server would send it is skipped:
one faulty client cannot stop the round for the others.
Fewer than t clients left at any stage is a :class:`~protocols.errors.DropoutError`.
A revealed share that is well formed but wrong cannot be dropped that way; when more
than t clients answer, every share is checked against the others and a wrong one
fails the round with :class:`~protocols.errors.CryptoError` instead of giving a wrong
sum (with exactly t answering it goes unnoticed: the semi-honest model's assumption).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from protocols.channels import crypto, fixedpoint, prg, shamir
from protocols.channels.bonawitz import (SEALED_SHARES_BYTES, Roster, array_field, collect, mask_sign,
                                         names_field, one_length, pairwise_seed, require_survivors, summed,
                                         well_formed)
from protocols.channels.config import SecAggConfig, SecAggResult, secagg_tag
from protocols.channels.shamir import Share
from protocols.codec import Message
from protocols.errors import CryptoError, InputError, ProtocolError
from protocols.transport.base import Transport, send_to_present


def secure_server(transport: Transport, *, clients: Sequence[str], config: SecAggConfig,
                  round: int) -> SecAggResult:
    """Run one masked round with ``clients``; return the sum over the survivors."""
    clients = tuple(clients)
    n, t, timeout = len(clients), config.threshold_for(len(clients)), config.stage_timeout
    ads, wait = collect(transport, clients, secagg_tag(round, "advertise"), timeout)
    keys = well_formed(ads, clients, _keys)
    u1 = [c for c in clients if c in keys]
    require_survivors(len(u1), n, t, "advertised keys", round)
    roster = Roster(names=tuple(u1), c_pks=tuple(keys[c][0] for c in u1), s_pks=tuple(keys[c][1] for c in u1),
                    threshold=t)
    send_to_present(transport, clients, secagg_tag(round, "roster"), names=u1, c_pks=roster.key_array("c"),
                    s_pks=roster.key_array("s"), threshold=t, n_clients=n,
                    scale_bits=config.scale_bits, prg=config.prg)

    shares, waited = collect(transport, u1, secagg_tag(round, "shares"), timeout)
    wait += waited
    rows = well_formed(shares, u1, lambda m: _share_rows(m, roster))
    u2 = [c for c in u1 if c in rows]
    require_survivors(len(u2), n, t, "shared their keys", round)
    _relay_shares(transport, roster, rows, u2, round)

    masked, waited = collect(transport, u2, secagg_tag(round, "masked"), timeout)
    wait += waited
    inputs = one_length(well_formed(masked, u2, lambda m: array_field(m, "y", np.uint64, (-1,))))
    u3 = [c for c in u2 if c in inputs]
    require_survivors(len(u3), n, t, "sent a masked input", round)
    total = summed(inputs, u3)
    send_to_present(transport, u2, secagg_tag(round, "unmask"), survivors=u3)

    reveals, waited = collect(transport, u3, secagg_tag(round, "reveal"), timeout)
    wait += waited
    dropped = [c for c in u2 if c not in u3]
    revealed = well_formed(reveals, u3, lambda m: _reveal_rows(m, roster, u3, dropped))
    u4 = [c for c in u3 if c in revealed]
    require_survivors(len(u4), n, t, "answered the unmasking request", round)
    _unmask(total, roster, {v: revealed[v] for v in u4}, u3, dropped, round, config.prg)
    return SecAggResult(vector=fixedpoint.decode(total, scale_bits=config.scale_bits),
                        survivors=tuple(u3), dropped=tuple(c for c in clients if c not in u3),
                        threshold=t, secure=True, wait_seconds=wait)


def _keys(message: Message) -> tuple[bytes, bytes]:
    """A client's two advertised public keys; ProtocolError unless both are usable X25519 keys
    (a low-order point would make every honest client's key agreement with it fail)."""
    c_pk, s_pk = message["c_pk"], message["s_pk"]
    if not all(isinstance(k, bytes) and crypto.usable_public(k) for k in (c_pk, s_pk)):
        raise ProtocolError(f"client {message.src!r} advertised malformed public keys")
    return c_pk, s_pk


def _share_rows(message: Message, roster: Roster) -> dict[str, np.ndarray]:
    """The sealed shares a member of U1 addressed to every other member, by recipient."""
    u = message.src
    to = names_field(message, "to")
    if to != tuple(v for v in roster.names if v != u):
        raise ProtocolError(f"client {u!r} sealed shares for the wrong set of clients")
    ct = array_field(message, "ct", np.uint8, (len(to), SEALED_SHARES_BYTES))
    return dict(zip(to, ct, strict=True))


def _relay_shares(transport: Transport, roster: Roster, rows: dict[str, dict[str, np.ndarray]], u2: list[str],
                  round: int) -> None:
    """Forward to every client of U1 the sealed shares addressed to it by the members of U2."""
    for v in roster.names:
        senders = [u for u in u2 if u != v]
        stacked = np.stack([rows[u][v] for u in senders]) if senders \
            else np.zeros((0, SEALED_SHARES_BYTES), np.uint8)
        send_to_present(transport, [v], secagg_tag(round, "inbox"), members=u2, ct=stacked, **{"from": senders})


def _unmask(total: np.ndarray, roster: Roster, reveals: dict[str, tuple[list[Share], list[Share]]],
            u3: list[str], dropped: list[str], round: int, prg_name: str) -> None:
    """Reconstruct b_u (u in U3) and s_sk_u (u dropped) from the responders' shares; remove their masks.

    Every responder's shares are used: the first t give each secret, the others must agree
    with them (:func:`shamir.reconstruct_all`), so a wrong share fails the round rather than
    the sum."""
    t = roster.threshold
    masks = prg.MaskAccumulator(total, prg_name)
    b_sets = [[b[i] for b, _ in reveals.values()] for i in range(len(u3))]
    for b_seed in shamir.reconstruct_all(b_sets, threshold=t, length=crypto.SEED_BYTES):
        masks.add(b_seed, -1)
    sk_sets = [[sk[i] for _, sk in reveals.values()] for i in range(len(dropped))]
    for u, raw in zip(dropped, shamir.reconstruct_all(sk_sets, threshold=t, length=crypto.KEY_BYTES), strict=True):
        s_sk = crypto.load_private(raw)
        if crypto.public_bytes(s_sk) != roster.s_pks[roster.index(u)]:
            raise CryptoError("shares do not reconstruct a valid secret")
        for v in u3:
            masks.add(pairwise_seed(s_sk, roster, u, v, round), -mask_sign(roster, v, u))


def _reveal_rows(message: Message, roster: Roster, u3: list[str], dropped: list[str]
                 ) -> tuple[list[Share], list[Share]]:
    """A responder's shares of b_u (u in U3) and of s_sk_u (u dropped), checked against the request."""
    v = message.src
    out = []
    for names_key, rows_key, expected in (("b_of", "b_shares", u3), ("sk_of", "sk_shares", dropped)):
        if names_field(message, names_key) != tuple(expected):
            raise ProtocolError(f"client {v!r} revealed shares for other clients than requested")
        rows = array_field(message, rows_key, np.uint8, (len(expected), shamir.SHARE_BYTES))
        try:
            out.append([shamir.Share.from_bytes(roster.x(v), row.tobytes()) for row in rows])
        except InputError:
            raise ProtocolError(f"client {v!r} revealed a malformed share") from None
    return out[0], out[1]
