"""TDCD with natural clients, each party on its own: the setup that precedes Algorithm 1.

A client sends its hub its sample IDs and column names (inside its own silo); the hub
checks its clients hold the same columns and disjoint rows, and compares the digest
of its sorted IDs with every other hub's, so all silos are known to hold the same
samples without any ID crossing a silo. Each hub then draws the split from the seed
(:func:`securefl.data.tdcd_clients.positions_by_ids`), tells each client which of its
rows train and test, and the roles of :mod:`securefl.algorithms.tdcd` and
:mod:`securefl.algorithms.tdcd_hub` run as in one process: ridge regression, or with
``n_classes`` (the federation's ``--classes``) a linear softmax model per silo.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from protocols.codec import Tag
from protocols.errors import ProtocolError
from protocols.transport.base import Transport
from securefl.algorithms.tdcd import TDCDConfig, tdcd_client
from securefl.algorithms.tdcd_hub import tdcd_hub
from securefl.data.tdcd_clients import ClientRows, check_same_columns, client_shard, id_digest, positions_by_ids
from securefl.data.tdcd_sets import SiloLayout

SETUP = "tdcd-setup"


def hub_party(transport: Transport, *, silo: int, clients: Sequence[str], hubs: Sequence[str],
              config: TDCDConfig, n_classes: int = 0) -> dict[str, Any]:
    """Hub ``hubs[silo]``: set up its clients' rows, then run :func:`tdcd_hub`."""
    ids, columns = [], []
    for client in clients:
        message = transport.recv(client, Tag(0, SETUP, "ids"))
        if not isinstance(message["ids"], bytes) or not isinstance(message["columns"], list):
            raise ProtocolError(f"{transport.name!r}: the setup message of {client!r} is malformed")
        ids.append(message["ids"].decode().split("\n") if message["ids"] else [])
        columns.append(message["columns"])
    check_same_columns(transport.name, columns, list(clients))
    _same_samples(transport, hubs, [i for client_ids in ids for i in client_ids])
    positions, n_train, n_test = positions_by_ids(ids, config.seed, where=f"silo {transport.name!r}")
    for client, p in zip(clients, positions):
        transport.send(client, Tag(0, SETUP, "rows"), train=p.train_local, test=p.test_local)
    layout = SiloLayout(silo, transport.name, tuple(clients), tuple(p.train_rows for p in positions),
                        tuple(p.test_rows for p in positions))
    return tdcd_hub(transport, layout=layout, hubs=hubs, n_train=n_train, n_test=n_test, outputs=n_classes or 1,
                    config=config)


def _same_samples(transport: Transport, hubs: Sequence[str], ids: list[str]) -> None:
    """ProtocolError on every hub unless all silos hold the same sample IDs (compared by digest)."""
    mine = id_digest(ids)
    for hub in hubs:
        if hub != transport.name:
            transport.send(hub, Tag(0, SETUP, "digest"), digest=mine, rows=len(ids))
    for hub in hubs:
        if hub != transport.name:
            theirs = transport.recv(hub, Tag(0, SETUP, "digest"))
            if theirs["digest"] != mine:
                raise ProtocolError(f"silos {transport.name!r} ({len(ids)} samples) and {hub!r} ({theirs['rows']}"
                                    " samples) hold different sample IDs; align them first (securefl psi)")


def client_party(transport: Transport, *, hub: str, silo: int, last: bool, rows: ClientRows, clients: int,
                 config: TDCDConfig, n_classes: int = 0) -> dict[str, Any]:
    """Client ``rows.name`` of silo ``silo``: hand its IDs to its hub, then run :func:`tdcd_client`."""
    transport.send(hub, Tag(0, SETUP, "ids"), ids="\n".join(rows.ids).encode(), columns=list(rows.columns))
    message = transport.recv(hub, Tag(0, SETUP, "rows"))
    train, test = message["train"], message["test"]
    for part in (train, test):
        if not isinstance(part, np.ndarray) or part.dtype.kind not in "iu" or part.ndim != 1 \
                or (part.size and not 0 <= int(part.min()) <= int(part.max()) < len(rows.ids)):
            raise ProtocolError(f"{transport.name!r}: the rows {hub!r} assigned are not indices of its own rows")
    shard = client_shard(rows, silo, train, test, bias=last)
    task = "classification" if n_classes else "regression"
    result = tdcd_client(transport, hub=hub, shard=shard, task=task, n_classes=n_classes, clients=clients,
                         config=config)
    return {**result, "silo": silo}


__all__ = ["SETUP", "client_party", "hub_party"]
