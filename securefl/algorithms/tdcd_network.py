"""TDCD with natural clients, each party on its own: the setup that precedes Algorithm 1.

A client sends its hub its sample IDs and column names (inside its own silo); the hub
checks its clients hold the same columns and disjoint rows, and compares the digest
of its sorted IDs with every other hub's, so all silos are known to hold the same
samples without any ID crossing a silo. Each hub then draws the split from the seed
(:func:`securefl.data.tdcd_clients.positions_by_ids`), tells each client which of its
rows train and test, and the roles of :mod:`securefl.algorithms.tdcd` and
:mod:`securefl.algorithms.tdcd_hub` run as in one process: ridge regression, or with
``n_classes`` (the federation's ``--classes``) a linear softmax model per silo.

Labels: every client holds its rows' targets, and the silos must agree on them. With two
or more silos the first client of the first silo deals a group key to every client
(:class:`protocols.channels.groupkey.GroupKeyMember`, relayed by the hubs, which see
public and sealed keys only); each client sends its hub the keyed sum
:func:`~securefl.data.tdcd_clients.label_tag` of its rows, and the hubs compare their
silos' sums as they compare ID digests. The check shows a hub neither a label nor the key
(the evaluation losses of Algorithm 1 tell it about labels: :mod:`securefl.algorithms.tdcd_hub`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from protocols.channels.groupkey import PUBLIC_BYTES, SEALED_BYTES, GroupKeyMember, pack, unpack
from protocols.codec import Tag
from protocols.errors import ProtocolError
from protocols.transport.base import Transport
from securefl.algorithms.tdcd import TDCDConfig, tdcd_client
from securefl.algorithms.tdcd_hub import tdcd_hub
from securefl.data.tdcd_clients import (LABEL_TAG_BYTES, ClientRows, add_tags, check_same_columns, client_shard,
                                        id_digest, label_tag, positions_by_ids)
from securefl.data.tdcd_sets import SiloLayout

SETUP = "tdcd-setup"
KEY_CONTEXT = "tdcd labels"


def hub_party(transport: Transport, *, silo: int, clients: Sequence[str], hubs: Sequence[str],
              config: TDCDConfig, n_classes: int = 0) -> dict[str, Any]:
    """Hub ``hubs[silo]``: set up its clients' rows, then run :func:`tdcd_hub`."""
    ids, columns, publics = [], [], {}
    for client in clients:
        message = transport.recv(client, Tag(0, SETUP, "ids"))
        if not isinstance(message["ids"], bytes) or not isinstance(message["columns"], list) \
                or not isinstance(message["key"], bytes) or len(message["key"]) != PUBLIC_BYTES:
            raise ProtocolError(f"{transport.name!r}: the setup message of {client!r} is malformed")
        ids.append(message["ids"].decode().split("\n") if message["ids"] else [])
        columns.append(message["columns"])
        publics[client] = message["key"]
    check_same_columns(transport.name, columns, list(clients))
    by_hub = _same_samples(transport, hubs, [i for client_ids in ids for i in client_ids], publics, len(clients))
    _relay_group_key(transport, hubs, clients, by_hub)
    positions, n_train, n_test = positions_by_ids(ids, config.seed, where=f"silo {transport.name!r}", names=clients)
    for client, p in zip(clients, positions):
        transport.send(client, Tag(0, SETUP, "rows"), train=p.train_local, test=p.test_local)
    if len(hubs) > 1:
        _same_labels(transport, hubs, add_tags([_label_tag_of(transport, c) for c in clients]))
    layout = SiloLayout(silo, transport.name, tuple(clients), tuple(p.train_rows for p in positions),
                        tuple(p.test_rows for p in positions))
    return tdcd_hub(transport, layout=layout, hubs=hubs, n_train=n_train, n_test=n_test, outputs=n_classes or 1,
                    config=config)


def _same_samples(transport: Transport, hubs: Sequence[str], ids: list[str],
                  publics: dict[str, bytes], clients: int) -> dict[str, dict[str, bytes]]:
    """ProtocolError on every hub unless all silos hold the same sample IDs (compared by digest) and
    have as many clients (the minibatch is batch_size per client); each hub's clients' public keys
    for the group key, which the hubs swap alongside."""
    mine, by_hub = id_digest(ids), {transport.name: dict(publics)}
    for hub, theirs in _swap(transport, hubs, "digest", digest=mine, rows=len(ids), clients=clients,
                             **pack(publics, PUBLIC_BYTES)).items():
        if theirs["clients"] != clients:
            raise ProtocolError(f"silos {transport.name!r} ({clients} clients) and {hub!r} ({theirs['clients']}"
                                " clients) differ: every silo needs the same number of clients")
        if theirs["digest"] != mine:
            raise ProtocolError(f"silos {transport.name!r} ({len(ids)} samples) and {hub!r} ({theirs['rows']}"
                                " samples) hold different sample IDs; align them first (securefl psi)")
        by_hub[hub] = unpack(theirs.fields, PUBLIC_BYTES, sender=hub)
    return by_hub


def _swap(transport: Transport, hubs: Sequence[str], name: str, **fields: Any) -> dict[str, Any]:
    """Send ``fields`` to every other hub and return each one's message of the same name."""
    others = [hub for hub in hubs if hub != transport.name]
    for hub in others:
        transport.send(hub, Tag(0, SETUP, name), **fields)
    return {hub: transport.recv(hub, Tag(0, SETUP, name)) for hub in others}


def _relay_group_key(transport: Transport, hubs: Sequence[str], clients: Sequence[str],
                     publics: dict[str, dict[str, bytes]]) -> None:
    """Carry the group key from the dealer (the first hub's first client) to every client, sealed.
    ``publics``: each hub's clients' public keys."""
    group = Tag(0, SETUP, "group")
    if len(hubs) == 1:
        for client in clients:
            transport.send(client, group, role="none")
        return
    if transport.name == hubs[0]:
        dealer, dealer_key, sealed = _deal(transport, hubs, clients[0], publics)
    else:
        message = transport.recv(hubs[0], Tag(0, SETUP, "sealed"))
        dealer, dealer_key = message["dealer"], message["dealer_key"]
        if not isinstance(dealer, str) or not isinstance(dealer_key, bytes) or len(dealer_key) != PUBLIC_BYTES:
            raise ProtocolError(f"{transport.name!r}: the group key message of {hubs[0]!r} is malformed")
        sealed = unpack(message.fields, SEALED_BYTES, sender=hubs[0])
    if set(sealed) != set(clients) - {dealer}:
        raise ProtocolError(f"{transport.name!r}: the group key was not sealed to each of its clients")
    for client in clients:
        if client != dealer:
            transport.send(client, group, role="receive", dealer=dealer, dealer_key=dealer_key, sealed=sealed[client])


def _deal(transport: Transport, hubs: Sequence[str], dealer: str,
          publics: dict[str, dict[str, bytes]]) -> tuple[str, bytes, dict[str, bytes]]:
    """The first hub's part: hand ``dealer`` every client's public key, pass each other hub its
    clients' sealed keys; the dealer, its public key and this hub's clients' sealed keys."""
    everyone = {c: key for hub in hubs for c, key in publics[hub].items()}
    transport.send(dealer, Tag(0, SETUP, "group"), role="deal", **pack(everyone, PUBLIC_BYTES))
    sealed = unpack(transport.recv(dealer, Tag(0, SETUP, "sealed")).fields, SEALED_BYTES, sender=dealer)
    for hub in hubs[1:]:
        theirs = {c: sealed[c] for c in publics[hub] if c in sealed}
        transport.send(hub, Tag(0, SETUP, "sealed"), dealer=dealer, dealer_key=everyone[dealer],
                       **pack(theirs, SEALED_BYTES))
    return dealer, everyone[dealer], {c: sealed[c] for c in publics[transport.name] if c in sealed}


def _label_tag_of(transport: Transport, client: str) -> bytes:
    tag = transport.recv(client, Tag(0, SETUP, "labels"))["tag"]
    if not isinstance(tag, bytes) or len(tag) != LABEL_TAG_BYTES:
        raise ProtocolError(f"{transport.name!r}: the label tag of {client!r} is malformed")
    return tag


def _same_labels(transport: Transport, hubs: Sequence[str], mine: bytes) -> None:
    """ProtocolError on every hub unless all silos' label tags agree."""
    for hub, theirs in _swap(transport, hubs, "labels", tag=mine).items():
        if theirs["tag"] != mine:
            raise ProtocolError(f"silos {transport.name!r} and {hub!r} hold different labels for the same samples"
                                " (compared by keyed hash); every silo's clients must hold the same target")


def client_party(transport: Transport, *, hub: str, silo: int, last: bool, rows: ClientRows, clients: int,
                 config: TDCDConfig, n_classes: int = 0) -> dict[str, Any]:
    """Client ``rows.name`` of silo ``silo``: hand its IDs to its hub, then run :func:`tdcd_client`."""
    member = GroupKeyMember(transport.name, context=KEY_CONTEXT)
    transport.send(hub, Tag(0, SETUP, "ids"), ids="\n".join(rows.ids).encode(), columns=list(rows.columns),
                   key=member.public)
    key = _group_key(transport, hub, member)
    message = transport.recv(hub, Tag(0, SETUP, "rows"))
    train, test = message["train"], message["test"]
    for part in (train, test):
        if not isinstance(part, np.ndarray) or part.dtype.kind not in "iu" or part.ndim != 1 \
                or (part.size and not 0 <= int(part.min()) <= int(part.max()) < len(rows.ids)):
            raise ProtocolError(f"{transport.name!r}: the rows {hub!r} assigned are not indices of its own rows")
    if key is not None:
        transport.send(hub, Tag(0, SETUP, "labels"), tag=label_tag(key, rows.ids, rows.y))
    shard = client_shard(rows, silo, train, test, bias=last)
    task = "classification" if n_classes else "regression"
    result = tdcd_client(transport, hub=hub, shard=shard, task=task, n_classes=n_classes, clients=clients,
                         config=config)
    return {**result, "silo": silo}


def _group_key(transport: Transport, hub: str, member: GroupKeyMember) -> bytes | None:
    """The group key, dealt by this client or sealed to it; None with one silo (nothing to compare)."""
    message = transport.recv(hub, Tag(0, SETUP, "group"))
    role = message["role"]
    if role == "none":
        return None
    if role == "deal":
        key, sealed = member.deal(unpack(message.fields, PUBLIC_BYTES, sender=hub))
        transport.send(hub, Tag(0, SETUP, "sealed"), **pack(sealed, SEALED_BYTES))
        return key
    if role == "receive" and all(isinstance(message[f], bytes) for f in ("dealer_key", "sealed")) \
            and isinstance(message["dealer"], str):
        return member.receive(message["dealer"], message["dealer_key"], message["sealed"])
    raise ProtocolError(f"{transport.name!r}: the group key message of {hub!r} is malformed")


__all__ = ["KEY_CONTEXT", "SETUP", "client_party", "hub_party"]
