"""The client role of secure aggregation (Bonawitz et al. 2017, semi-honest version).

Stages, all through the server (tags ``Tag(round, "secagg", name)``):

1. ``advertise``: send two fresh X25519 public keys, c_pk (share encryption) and
   s_pk (pairwise masks).                         <- ``roster``: U1 and their keys
2. ``shares``: Shamir-share a fresh self-mask seed b and s_sk (threshold t among
   U1) and send each other client its two shares sealed with ChaCha20-Poly1305.
                                                   <- ``inbox``: U2 and shares for us
3. ``masked``: send y = x + PRG(b) + sum_v +-PRG(s_uv) over v in U2, in Z_2^64.
                                                   <- ``unmask``: the survivors U3
4. ``reveal``: send shares of b_u for u in U3 and of s_sk_u for u in U2 \\ U3.

Every wait for the server lasts ``config.client_wait`` (2 x ``stage_timeout``): the
server's stage may wait ``stage_timeout`` for a silent client before it works and
answers, and an honest client must not give up first. The roster carries the
server's threshold, ``scale_bits`` and ``prg``; a client whose config differs refuses
it (ProtocolError naming the setting) rather than add a wrong mask or scale.

A client missing from a server list is out of the round and returns ``False``. A
client told to ``drop_after`` a stage stops sending there and returns ``None``
(for dropout tests and benchmarks). Private keys, b and every derived key stay in
this function's locals.
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.channels import crypto, fixedpoint, prg, shamir
from protocols.channels.bonawitz import (SEALED_SHARES_BYTES, Roster, array_field, check_unmask_request,
                                         mask_sign, names_field, open_shares, pairwise_seed, seal_shares,
                                         share_rows)
from protocols.channels.config import SecAggConfig, secagg_tag
from protocols.codec import Message
from protocols.errors import InputError, PeerFailedError, ProtocolError
from protocols.transport.base import Transport


def secure_client(transport: Transport, *, server: str, vector: np.ndarray, config: SecAggConfig,
                  round: int, drop_after: str | None) -> bool | None:
    """Take part in one masked round with ``vector`` (1-D float64); see the module docstring."""
    me, wait = transport.name, config.client_wait
    c_sk, s_sk = crypto.new_private_key(), crypto.new_private_key()
    transport.send(server, secagg_tag(round, "advertise"),
                   c_pk=crypto.public_bytes(c_sk), s_pk=crypto.public_bytes(s_sk))
    if drop_after == "advertise":
        return None
    roster = _read_roster(transport.recv(server, secagg_tag(round, "roster"), timeout=wait),
                          me, c_sk, s_sk, config)
    if roster is None:
        return False
    encoded = fixedpoint.encode(vector, scale_bits=config.scale_bits, n_summands=len(roster.names))
    b_seed = crypto.new_seed()
    own = _share_keys(transport, server, roster, c_sk, s_sk, b_seed, round)
    if drop_after == "share_keys":
        return None
    inbox = transport.recv(server, secagg_tag(round, "inbox"), timeout=wait)
    members = names_field(inbox, "members")
    if me not in members:
        return False
    held = _open_inbox(inbox, members, roster, c_sk, me, round)
    held[me] = own
    masked = _mask(encoded, b_seed, s_sk, roster, members, me, round, config.prg)
    try:
        transport.send(server, secagg_tag(round, "masked"), y=masked)
    except PeerFailedError:  # too late: the server finished the round without this client
        return False
    if drop_after == "masked_input":
        return None
    survivors = names_field(transport.recv(server, secagg_tag(round, "unmask"), timeout=wait), "survivors")
    if me not in survivors:
        return False
    dropped = check_unmask_request(members, survivors, roster.threshold)
    try:
        transport.send(server, secagg_tag(round, "reveal"),
                       b_of=list(survivors), b_shares=share_rows([held[u][0] for u in survivors]),
                       sk_of=list(dropped), sk_shares=share_rows([held[u][1] for u in dropped]))
    except PeerFailedError:  # too late: the server unmasked with the other survivors' shares and finished
        pass
    return True


def _read_roster(message: Message, me: str, c_sk: X25519PrivateKey, s_sk: X25519PrivateKey,
                 config: SecAggConfig) -> Roster | None:
    """Check the server's roster (U1 and keys); None if this client is not on it."""
    names = names_field(message, "names")
    n = len(names)
    c_pks = array_field(message, "c_pks", np.uint8, (n, crypto.KEY_BYTES))
    s_pks = array_field(message, "s_pks", np.uint8, (n, crypto.KEY_BYTES))
    threshold, n_clients = message["threshold"], message["n_clients"]
    if len(set(names)) != n or type(n_clients) is not int or type(threshold) is not int or n_clients < n:
        raise ProtocolError("server's roster is malformed")  # type(): 2.0 == 2 and True == 1 must not pass
    try:
        allowed = config.threshold_for(n_clients)
    except InputError as exc:
        raise ProtocolError(f"server's roster is for {n_clients} clients, which this client's SecAggConfig"
                            f" does not allow: {exc}") from None
    if threshold != allowed or n < threshold:
        raise ProtocolError(f"server's roster has threshold {threshold!r} for {n} of {n_clients}"
                            f" clients, which this client's SecAggConfig does not allow")
    _check_settings(message, config)
    roster = Roster(names=names, c_pks=tuple(bytes(k) for k in c_pks),
                    s_pks=tuple(bytes(k) for k in s_pks), threshold=threshold)
    if me not in names:
        return None
    i = roster.index(me)
    if (roster.c_pks[i], roster.s_pks[i]) != (crypto.public_bytes(c_sk), crypto.public_bytes(s_sk)):
        raise ProtocolError("server's roster lists other keys for this client")
    return roster


def _check_settings(message: Message, config: SecAggConfig) -> None:
    """ProtocolError unless the roster's ``scale_bits`` and ``prg`` are this client's: with another
    prg the masks would not cancel, with another scale the sum would decode wrongly, silently."""
    for name in ("scale_bits", "prg"):
        theirs, mine = message[name], getattr(config, name)
        if type(theirs) is not type(mine) or theirs != mine:  # type(): True == 1 must not pass
            raise ProtocolError(f"server's roster has {name}={theirs!r} but this client's SecAggConfig has"
                                f" {name}={mine!r}; server and clients must be given equal configs")


def _share_keys(transport: Transport, server: str, roster: Roster, c_sk: X25519PrivateKey,
                s_sk: X25519PrivateKey, b_seed: bytes, round: int) -> tuple[shamir.Share, shamir.Share]:
    """Send every other client its sealed shares of (b, s_sk); return this client's own pair."""
    me, n, t = transport.name, len(roster.names), roster.threshold
    b_shares = shamir.split(b_seed, n, t)
    sk_shares = shamir.split(crypto.private_bytes(s_sk), n, t)
    others = [v for v in roster.names if v != me]
    sealed = [seal_shares(c_sk, roster, round, me, v, b_shares[roster.index(v)], sk_shares[roster.index(v)])
              for v in others]
    rows = np.frombuffer(b"".join(sealed), dtype=np.uint8).reshape(len(others), SEALED_SHARES_BYTES)
    transport.send(server, secagg_tag(round, "shares"), to=others, ct=rows)
    i = roster.index(me)
    return b_shares[i], sk_shares[i]


def _open_inbox(inbox: Message, members: tuple[str, ...], roster: Roster, c_sk: X25519PrivateKey,
                me: str, round: int) -> dict[str, tuple[shamir.Share, shamir.Share]]:
    """Check U2 and decrypt the shares each other member of U2 sent us."""
    if len(set(members)) != len(members) or not set(members) <= set(roster.names):
        raise ProtocolError("server's member list is not a set of clients from the roster")
    if len(members) < roster.threshold:
        raise ProtocolError(f"server kept {len(members)} clients, below the threshold {roster.threshold}")
    senders = names_field(inbox, "from")
    if senders != tuple(m for m in members if m != me):
        raise ProtocolError("server's inbox does not match its member list")
    rows = array_field(inbox, "ct", np.uint8, (len(senders), SEALED_SHARES_BYTES))
    return {u: open_shares(c_sk, roster, round, u, me, row.tobytes())
            for u, row in zip(senders, rows, strict=True)}


def _mask(encoded: np.ndarray, b_seed: bytes, s_sk: X25519PrivateKey, roster: Roster,
          members: tuple[str, ...], me: str, round: int, prg_name: str) -> np.ndarray:
    """y = x + PRG(b) + sum over other members v of sign(me, v) * PRG(s_{me,v}), mod 2^64.

    Masks ``encoded`` in place (the caller does not use it again) and returns it.
    """
    masks = prg.MaskAccumulator(encoded, prg_name)
    masks.add(b_seed, 1)
    for v in members:
        if v != me:
            masks.add(pairwise_seed(s_sk, roster, me, v, round), mask_sign(roster, me, v))
    return masks.acc
