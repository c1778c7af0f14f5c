"""TDCD's hub role and the runner that puts silos, hubs and clients together.

A hub holds no data and no model of its own: it averages its clients' weights (masked
sums only, by default), draws the round's minibatches, stacks its clients' ``Phi``,
exchanges it with the other hubs and hands each client the others' sum for its rows.
It learns which of its clients holds which row (its silo's own bookkeeping), its silo's
averaged weights (the sum it unmasks) and the ``Phi`` of the rows it stacks, never another
silo's weight. Those two are enough to rebuild its own clients' features: each round's
``Phi = x . average`` is one linear equation per row, so after about as many rounds as
the silo has columns the hub can solve for every row it has seen (every training row,
with evaluation each round). That is Algorithm 1 as the paper writes it, in which the
hub forms the average. Labels never cross, but at each evaluation the hub holds every
row's prediction (its clients' ``Phi`` plus the others' sum) and each client reports
its loss sum: one equation per evaluation, linear in that client's labels, so the hub
learns their projection onto the features' span, every label where a client has no
more rows than features (``tests/securefl/algorithms/test_tdcd.py``, both solves).
Each client's report also holds its count of correct predictions (classification)
and the squared norm of its silo's averaged weights (the objective's regulariser,
which the hub could compute itself). ``eval_every=0`` leaves one evaluation of the
training rows and one of the test rows.

With three or more silos and secure aggregation on, the hubs swap their stacked
``Phi`` and their silos' squared weight norms through :class:`protocols.channels.PeerSum`:
each hub learns the sums over the silos and so the others' sums it needs, never another
silo's value on its own. With two silos the others' sum *is* the other silo's value,
so it goes in clear: each hub then learns the other silo's ``Phi`` of every row and the
squared norm of its averaged weights (one number a round, not the weights).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from protocols.channels import PeerSum
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.transport import run_parties
from protocols.transport.base import Transport
from protocols.transport.relay import relayed
from securefl.algorithms.tdcd import STAGE, TDCDConfig, draw_batches, tdcd_client
from securefl.data.tdcd_sets import SiloLayout, TieredSplit
from securefl.runtime import resolve_device
from securefl.runtime.federated import server_average


def owners(rows: Sequence[np.ndarray], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """For each global row position: which client holds it and at which local index."""
    owner, local = np.full(n_rows, -1), np.zeros(n_rows, dtype=np.int64)
    for k, positions in enumerate(rows):
        owner[positions], local[positions] = k, np.arange(len(positions))
    if (owner < 0).any() or sum(len(r) for r in rows) != n_rows:
        raise InputError(f"the clients' rows do not cover the {n_rows} rows exactly once")
    return owner, local


def masks_exchange(config: TDCDConfig, silos: int) -> bool:
    """Whether hubs swap through the masked peer sum: secure, and a sum of others that is not one silo's."""
    return config.secure and silos >= 3


@dataclass(frozen=True)
class HubExchange:
    """How one hub swaps values with the other hubs: masked through a peer sum, or in clear."""

    transport: Transport
    hubs: tuple[str, ...]
    group: PeerSum | None

    @classmethod
    def start(cls, transport: Transport, hubs: Sequence[str], config: TDCDConfig) -> "HubExchange":
        """Agree the peer-sum keys when masking protects something (secure, three or more silos)."""
        group = PeerSum.agree(transport, members=hubs) if masks_exchange(config, len(hubs)) else None
        return cls(transport, tuple(hubs), group)

    def others(self, mine: np.ndarray, tag: Tag) -> np.ndarray:
        """The other hubs' sum of their ``mine`` (arrays of one shape and dtype at every hub)."""
        if self.group is not None:
            return (self.group.total(mine, tag=tag) - mine).astype(mine.dtype)
        me = self.transport.name
        peers = [h for h in self.hubs if h != me]
        for hub in peers:
            self.transport.send(hub, tag, phi=mine)
        others = np.zeros_like(mine)
        for hub in peers:
            theirs = self.transport.recv(hub, tag)["phi"]
            if not isinstance(theirs, np.ndarray) or theirs.dtype != mine.dtype or theirs.shape != mine.shape:
                raise ProtocolError(f"{me!r}, {tag}: the values from {hub!r} are not {mine.shape} {mine.dtype}")
            others += theirs
        return others


def share(transport: Transport, layout: SiloLayout, exchange: HubExchange, positions: Sequence[np.ndarray],
          union: np.ndarray, outputs: int, stage: str, rnd: int) -> None:
    """Stack the clients' Phi over ``union``, swap it with the other hubs, return each client the others'
    sum for its ``positions`` (global rows, in the order the client sent them)."""
    stacked = np.zeros((len(union), outputs), np.float32)
    where = [np.searchsorted(union, rows) for rows in positions]  # each client's rows within ``union``
    for client, rows in zip(layout.clients, where):
        phi = transport.recv(client, Tag(rnd, stage, "phi"))["phi"]
        if not isinstance(phi, np.ndarray) or phi.dtype != np.float32 or phi.shape != (len(rows), outputs):
            raise ProtocolError(f"{transport.name!r}, round {rnd}: Phi from {client!r} is not {len(rows)}x{outputs}"
                                " float32")
        stacked[rows] = phi
    others = exchange.others(stacked, Tag(rnd, stage, "exchange"))
    for client, rows in zip(layout.clients, where):
        transport.send(client, Tag(rnd, stage, "others"), phi=others[rows])


def plan_round(transport: Transport, layout: SiloLayout, table: tuple[np.ndarray, np.ndarray],
               batches: list[np.ndarray], rnd: int) -> list[np.ndarray]:
    """Tell each client its local rows in each minibatch; per client, the global rows of its Phi."""
    owner, local = table
    positions = []
    for k, client in enumerate(layout.clients):
        mine = [local[b[owner[b] == k]] for b in batches]
        transport.send(client, Tag(rnd, STAGE, "batches"), rows=np.concatenate(mine).astype(np.int64),
                       counts=np.array([len(m) for m in mine], dtype=np.int64))
        positions.append(layout.train_rows[k][np.unique(np.concatenate(mine))])
    return positions


def evaluate(transport: Transport, layout: SiloLayout, exchange: HubExchange, rows: Sequence[np.ndarray],
             n_rows: int, outputs: int, stage: str, rnd: int, l2: float) -> dict[str, float]:
    """The federation's loss (and accuracy) over every row of a split, with the averaged model."""
    share(transport, layout, exchange, rows, np.arange(n_rows), outputs, stage, rnd)
    reports = [transport.recv(client, Tag(rnd, stage, "loss")) for client in layout.clients]
    if sum(int(r["rows"]) for r in reports) != n_rows:
        raise ProtocolError(f"{transport.name!r}, round {rnd}: the clients' losses do not cover the {n_rows} rows")
    own = np.array([float(reports[0]["sqnorm"])])  # this silo's averaged weights' squared norm
    squared = float(own[0] + exchange.others(own, Tag(rnd, stage, "norm"))[0])
    loss = sum(float(r["loss"]) for r in reports) / n_rows
    return {"round": rnd, "loss": loss, "objective": loss + 0.5 * l2 * squared,
            "accuracy": sum(int(r["correct"]) for r in reports) / n_rows}


def tdcd_hub(transport: Transport, *, layout: SiloLayout, hubs: Sequence[str], n_train: int, n_test: int,
             outputs: int, config: TDCDConfig) -> dict[str, Any]:
    """Hub ``layout.hub``'s whole run; returns the objective after each evaluated round and the test metrics."""
    table = owners(layout.train_rows, n_train)
    owners(layout.test_rows, n_test)
    exchange = HubExchange.start(transport, hubs, config)
    history, seconds = [], []
    for rnd in range(config.rounds + 1):
        took, dropped = server_average(transport, clients=layout.clients,
                                       config=config.secagg(len(layout.clients)), round=rnd)
        if dropped:
            raise ProtocolError(f"{transport.name!r}, round {rnd}: clients {list(dropped)} dropped out; TDCD needs"
                                " every row's Phi")
        seconds.append(took)
        if config.evaluates(rnd):
            history.append(evaluate(transport, layout, exchange, layout.train_rows, n_train, outputs, "eval-train",
                                    rnd, config.l2))
        if rnd < config.rounds:
            batches = draw_batches(config, rnd, n_train, len(layout.clients))
            positions = plan_round(transport, layout, table, batches, rnd)
            share(transport, layout, exchange, positions, np.unique(np.concatenate(batches)), outputs, STAGE, rnd)
        if config.progress is not None:
            config.progress(rnd, config.rounds)
    test = evaluate(transport, layout, exchange, layout.test_rows, n_test, outputs, "eval-test", config.rounds,
                    config.l2)
    return {"hub": transport.name, "history": history, "test": test, "average_seconds": seconds}


def check_split(split: TieredSplit, config: TDCDConfig) -> None:
    """One-line errors for a split TDCD cannot run."""
    if not isinstance(config, TDCDConfig):
        raise InputError(f"TDCD needs a TDCDConfig, got {type(config).__name__}")
    sizes = {len(layout.clients) for layout in split.layouts}
    if len(sizes) != 1:
        raise InputError(f"every silo needs the same number of clients (the minibatch is batch_size per client),"
                         f" got {sorted(sizes)}")


def run_tdcd(split: TieredSplit, config: TDCDConfig, *, backend: str = "inprocess",
             record: bool = False) -> dict[str, Any]:
    """Run every hub and client of ``split`` and report (the DESIGN result object, plus the curve);
    with ``record``, also every party's delivered messages under ``logs``."""
    check_split(split, config)
    hubs = [layout.hub for layout in split.layouts]
    outputs = 1 if split.task == "regression" else split.n_classes
    clients = len(split.layouts[0].clients)
    quiet = replace(config, progress=None)
    roles: dict[str, Any] = {}
    kwargs: dict[str, dict[str, Any]] = {}
    for layout, shards in zip(split.layouts, split.shards):
        roles[layout.hub] = tdcd_hub
        kwargs[layout.hub] = {"layout": layout, "hubs": hubs, "n_train": split.n_train, "n_test": split.n_test,
                              "outputs": outputs, "config": quiet}
        for shard in shards:
            roles[shard.name] = tdcd_client
            kwargs[shard.name] = {"hub": layout.hub, "shard": shard, "task": split.task,
                                  "n_classes": split.n_classes, "clients": clients, "config": quiet}
    with relayed(config.progress, backend) as progress:
        kwargs[hubs[0]]["config"] = replace(quiet, progress=progress)
        run = run_parties(roles, kwargs=kwargs, backend=backend, timeout=config.stage_timeout, record=record)
    result = tdcd_result(split, config, run, backend)
    if record:
        result["logs"] = run.logs
    return result


def test_metrics(hub_result: dict[str, Any], task: str) -> dict[str, float]:
    """A hub's test metrics (the mean squared error and its root, or accuracy and loss) and the
    last training objective."""
    test = hub_result["test"]
    metrics = ({"mse": 2 * test["loss"], "rmse": float(np.sqrt(2 * test["loss"]))} if task == "regression"
               else {"accuracy": test["accuracy"], "loss": test["loss"]})
    return {**metrics, "train_objective": hub_result["history"][-1]["objective"]}


def tdcd_result(split: TieredSplit, config: TDCDConfig, run: Any, backend: str) -> dict[str, Any]:
    """The result object: test metrics, the training objective per evaluated round, bytes by purpose."""
    first = run.results[split.layouts[0].hub]
    metrics = test_metrics(first, split.task)
    by_purpose = {"training": 0, "averaging": 0, "evaluation": 0}
    for comm in run.comm.values():
        for key, counts in comm["per_tag"].items():
            purpose = "training" if key.startswith(f"{STAGE}/") else "evaluation" if key.startswith("eval-") \
                else "averaging"
            by_purpose[purpose] += counts["bytes"]
    clients = len(split.layouts[0].clients)
    return {"method": "tdcd", "dataset": split.dataset, "seed": config.seed,
            "device": str(resolve_device(config.device)), "metrics": metrics, "seconds": run.seconds,
            "bytes": run.bytes, "bytes_by_purpose": by_purpose, "history": first["history"],
            "settings": {**config.settings(), "silos": split.silos, "clients_per_silo": clients,
                         "n_train": split.n_train, "n_test": split.n_test, "task": split.task,
                         "columns": [list(c) for c in split.columns], "backend": backend,
                         "aggregation": "secure (masked sums)" if config.secagg(clients).secure else "plain",
                         "hub_exchange": "masked peer sum" if masks_exchange(config, split.silos) else "clear"},
            **run.gpu_fields()}


__all__ = ["HubExchange", "check_split", "evaluate", "masks_exchange", "owners", "plan_round", "run_tdcd", "share",
           "tdcd_hub", "tdcd_result", "test_metrics"]
