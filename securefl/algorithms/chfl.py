"""Continual horizontal federated learning (CHFL; Mori et al., Algorithm 2) as party roles.

Clients share a set of *common* features and each holds *unique* ones; their
sample IDs are disjoint. Each client trains a progressive network
(:mod:`securefl.models.pnn`): the common column is trained by FedAvg on the
common features, the client's unique column and lateral matrices locally on the
combined output's loss with the common column fixed. After each round of
``local_epochs`` epochs every client hands its common column to
:func:`~securefl.runtime.federated.client_average`: with ``SecAggConfig(secure=True)``
it travels masked and the server (:func:`~securefl.runtime.federated.averaging_server`)
learns only the sum; the unweighted mean (Algorithm 2, line 7) comes back to
every client. Unique columns, lateral matrices and the baselines' models never
leave their client.

``mu`` (eq. 6's fixed lateral strength) is chosen per client on its own
validation rows from ``CHFLConfig.mus``; one run trains a unique column for
every ``mu`` (and ``mu = 0``) against the same common column, which is exact
because the common column never sees a unique column's loss
(:mod:`securefl.algorithms.chfl_local`). The same run also yields the Common
baseline (the common column alone) and, when asked, Local and the simple method.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Sequence

import numpy as np

from protocols.channels import SecAggConfig
from protocols.errors import InputError
from protocols.transport import Transport, relayed, run_parties
from securefl.algorithms.chfl_local import HEADS, ClientModels
from securefl.algorithms.training import intra_op_threads
from securefl.data.chfl_partition import CHFLPartition, ClientData
from securefl.models.pnn import PAPER_HIDDEN
from securefl.runtime import resolve_device
from securefl.runtime import validation as check
from securefl.runtime.federated import averaging_server, client_average

SERVER = "server"
METHODS = ("chfl", "common", "local", "simple")
METHOD_HEADS = {"chfl": ("chfl",), "common": (), "simple": ("simple",)}
"""The client-local models each federated method trains beside the common column."""
REPORTED = ("common", "local", "chfl_mu0", "chfl", "simple")
"""The result rows of a run, in the paper's column order (chfl_mu0: CHFL with mu = 0)."""


@dataclass(frozen=True, kw_only=True)
class CHFLConfig:
    """CHFL settings (paper, section V-A: MLP columns 512-256-128, Adam, 5 local epochs, batch 64).

    rounds:       T, the number of communication rounds. The paper does not give T;
                  20 rounds x 5 local epochs = 100 epochs over each client's rows, by
                  which the validation accuracy of every method has levelled off on
                  covertype, while the model of each method is picked at its best
                  round on the client's validation rows (``select_round``).
    lr:           Adam's learning rate, one value for every client of a run. The paper
                  has each client tune it on its validation rows from an unstated grid:
                  :func:`securefl.algorithms.chfl_tuning.run_chfl_tuned` (``securefl run
                  chfl --lrs``) repeats a run per rate and each client keeps its own
                  choice; ``python -m benchmarks.chfl --lrs`` does the same over its runs.
    mus:          the mu > 0 grid; each client picks mu (and the round) on its own
                  validation rows. mu = 0 is always trained too, as its own method.
                  The paper names no grid. The default includes small mu: with only
                  (0.5, 1) CHFL mu > 0 trailed mu = 0 by about a point at 40-50%
                  common features, and clients given (0.1, 0.25, 0.5, 1) mostly pick
                  0.1 or 0.25 (benchmarks/results/chfl_mu_grid.md). ``benchmarks.chfl``
                  uses the same default.
    heads:        the client-local models trained beside the common column:
                  "chfl" (the unique columns), "local" and "simple" (the baselines).
    standardize:  each client standardises its features with its own training rows'
                  statistics (DESIGN.md), keeping 0/1 indicator columns as they are;
                  off feeds the raw values (the paper does not say it scales).
    timeout:      seconds a party waits for a peer (a round's slowest client).
    """

    rounds: int = 20
    local_epochs: int = 5
    batch_size: int = 64
    lr: float = 1e-3
    hidden: tuple[int, ...] = PAPER_HIDDEN
    mus: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)
    heads: tuple[str, ...] = ("chfl",)
    select_round: bool = True
    standardize: bool = True
    seed: int = 0
    device: str = "cpu"
    threads: int | None = 1
    timeout: float = 3600.0
    progress: Callable[[int, int], None] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        owner = "CHFLConfig"
        for name in ("rounds", "local_epochs", "batch_size"):
            check.positive_int(owner, name, getattr(self, name))
        for name in ("hidden", "mus", "heads"):
            if not isinstance(getattr(self, name), (tuple, list)):
                raise InputError(f"CHFLConfig.{name} must be a tuple, got {getattr(self, name)!r}")
        for width in self.hidden:
            check.positive_int(owner, "hidden", width)
        check.positive_number(owner, "lr", self.lr)
        if not self.mus or any(isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 < m <= 1
                               for m in self.mus):
            raise InputError(f"CHFLConfig.mus must be a non-empty tuple of values in (0, 1], got {self.mus!r}")
        if len({f"{m:g}" for m in self.mus}) != len(self.mus):  # each names its column and result: chfl_mu=0.5
            raise InputError(f"CHFLConfig.mus must be distinct (as printed with 6 significant digits),"
                             f" got {self.mus!r}")
        unknown = [h for h in self.heads if h not in HEADS]
        if unknown:
            raise InputError(f"CHFLConfig.heads: unknown head(s) {unknown}; choose from {list(HEADS)}")
        check.seed(owner, self.seed)
        check.device(owner, self.device)
        check.positive_int(owner, "threads", self.threads, optional=True)
        for name in ("select_round", "standardize"):
            check.flag(owner, name, getattr(self, name))
        check.positive_number(owner, "timeout", self.timeout)
        check.callback(owner, "progress", self.progress)

    def settings(self) -> dict[str, Any]:
        """The JSON-ready settings (everything but the progress callback)."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in fields(self) if f.name != "progress"}


def secagg_config(config: CHFLConfig, *, secure: bool) -> SecAggConfig:
    """The aggregation settings of a run: masked or plain, waiting up to ``config.timeout`` per stage."""
    return SecAggConfig(secure=secure, stage_timeout=float(config.timeout))


def chfl_client(transport: Transport, *, server: str, data: ClientData, n_classes: int, config: CHFLConfig,
                secagg: SecAggConfig) -> dict[str, Any]:
    """Role of a client: T rounds of local training, then secure averaging of the common column only."""
    device = resolve_device(config.device)
    start = time.perf_counter()
    train_s, average_s = [], []
    with intra_op_threads(config.threads):
        models = ClientModels(data, n_classes, config, device)
        federated = list(models.common.parameters())
        for t in range(config.rounds):
            begin = time.perf_counter()
            models.train_round()
            trained = time.perf_counter()
            client_average(transport, server=server, tensors=federated, config=secagg, round=t)
            average_s.append(time.perf_counter() - trained)
            train_s.append(trained - begin)
            models.evaluate()
            if config.progress is not None:
                config.progress(t + 1, config.rounds)
    return _client_report(transport.name, models, start, train_s, average_s,
                          bytes_sent=transport.meter.bytes_sent)


def local_client(data: ClientData, n_classes: int, config: CHFLConfig) -> dict[str, Any]:
    """The Local baseline for one client: its own MLP on all its features; no messages at all."""
    local = replace(config, heads=("local",))
    start = time.perf_counter()
    train_s = []
    with intra_op_threads(config.threads):
        models = ClientModels(data, n_classes, local, resolve_device(config.device), common=False)
        for t in range(config.rounds):
            begin = time.perf_counter()
            models.train_round()
            train_s.append(time.perf_counter() - begin)
            models.evaluate()
            if config.progress is not None:
                config.progress(t + 1, config.rounds)
    return _client_report(data.name, models, start, train_s, [], bytes_sent=0)


def _client_report(name: str, models: ClientModels, start: float, train_s: list[float],
                   average_s: list[float], *, bytes_sent: int) -> dict[str, Any]:
    data = models.data
    return {"client": name, "train_rows": len(data.train.labels), "val_rows": len(data.val.labels),
            "test_rows": len(data.test.labels), "unique_features": int(data.train.unique.shape[1]),
            "selected": models.selections(), "history": models.history, "train_seconds": train_s,
            "average_seconds": average_s, "bytes_sent": bytes_sent, "seconds": time.perf_counter() - start}


def chfl_parties(partition: CHFLPartition, config: CHFLConfig, *, secure_agg: bool = True
                 ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Roles and keyword arguments of the server and every client for :func:`run_parties`
    (the first client reports progress)."""
    secagg = secagg_config(config, secure=secure_agg)
    names = [c.name for c in partition.clients]
    quiet = replace(config, progress=None)
    roles: dict[str, Any] = {SERVER: averaging_server, **{n: chfl_client for n in names}}
    kwargs: dict[str, dict[str, Any]] = {SERVER: {"clients": names, "rounds": config.rounds, "config": secagg}}
    for i, client in enumerate(partition.clients):
        kwargs[client.name] = {"server": SERVER, "data": client, "n_classes": partition.n_classes,
                               "config": config if i == 0 else quiet, "secagg": secagg}
    return roles, kwargs


def summarize(clients: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: mean and std over clients of the selected models' test accuracy, and per client.

    ``selected`` keeps each client's choice with its validation accuracy, so a caller
    can also choose among runs (the CHFL benchmark's per-client learning rate).
    """
    out = {}
    for method in REPORTED:
        chosen = {c["client"]: c["selected"][method] for c in clients if method in c["selected"]}
        if not chosen:
            continue
        acc = np.array([s["test"] for s in chosen.values()])
        out[method] = {"accuracy": float(acc.mean()), "accuracy_std_clients": float(acc.std()),
                       "last_round_accuracy": float(np.mean([s["last_round_test"] for s in chosen.values()])),
                       "clients": {c: s["test"] for c, s in chosen.items()},
                       "selected": {c: {"variant": s["variant"], "round": s["round"], "val": s["val"],
                                        "last_round_test": s["last_round_test"]} for c, s in chosen.items()}}
    return out


def run_chfl(partition: CHFLPartition, config: CHFLConfig, *, secure_agg: bool = True,
             backend: str = "inprocess", record: bool = False) -> dict[str, Any]:
    """Run CHFL (and the heads in ``config.heads``) with a server and every client; the DESIGN result dict.

    ``metrics`` holds CHFL (mu > 0) under ``accuracy`` and every method under ``methods``.
    ``round_seconds`` is each round's wall time; ``aggregation_seconds`` the time the
    last client to finish training spent in the averaging protocol (its pure cost).
    """
    if not isinstance(config, CHFLConfig):
        raise InputError(f"run_chfl needs a CHFLConfig, got {type(config).__name__}")
    device = resolve_device(config.device)
    with relayed(config.progress, backend) as progress:
        roles, kwargs = chfl_parties(partition, replace(config, progress=progress), secure_agg=secure_agg)
        run = run_parties(roles, kwargs=kwargs, backend=backend, record=record, timeout=float(config.timeout))
    clients = [run.results[c.name] for c in partition.clients]
    methods = summarize(clients)
    main = methods.get("chfl", methods["common"])
    aggregation = np.min([c["average_seconds"] for c in clients], axis=0)
    rounds = np.max(np.add([c["train_seconds"] for c in clients], [c["average_seconds"] for c in clients]), axis=0)
    result = {
        "method": "chfl", "dataset": partition.dataset, "seed": config.seed, "device": str(device),
        "metrics": {"accuracy": main["accuracy"], "clients": main["clients"],
                    "methods": {m: v["accuracy"] for m, v in methods.items()}},
        "seconds": run.seconds, "bytes": run.bytes, "methods": methods,
        "round_seconds": rounds.tolist(), "aggregation_seconds": aggregation.tolist(),
        "server_round_seconds": run.results[SERVER]["round_seconds"],
        "bytes_per_party": {name: c["bytes_sent"] for name, c in run.comm.items()},
        "settings": {**config.settings(), **partition.settings, "secure_aggregation": secure_agg,
                     "backend": backend, "average": "unweighted mean of the clients' common columns"},
        "clients": clients, **run.gpu_fields(),
    }
    if record:
        result["logs"] = run.logs
    return result


def run_local(partition: CHFLPartition, config: CHFLConfig) -> dict[str, Any]:
    """The Local baseline on every client (no server, no messages); the DESIGN result dict."""
    device = resolve_device(config.device)
    start = time.perf_counter()
    clients = [local_client(c, partition.n_classes, config if i == 0 else replace(config, progress=None))
               for i, c in enumerate(partition.clients)]
    methods = summarize(clients)
    return {"method": "local", "dataset": partition.dataset, "seed": config.seed, "device": str(device),
            "metrics": {"accuracy": methods["local"]["accuracy"], "clients": methods["local"]["clients"]},
            "seconds": time.perf_counter() - start, "bytes": 0, "methods": methods,
            "settings": {**config.settings(), "heads": ["local"], **partition.settings}, "clients": clients}


def run_chfl_method(method: str, partition: CHFLPartition, config: CHFLConfig, *, secure_agg: bool = True,
                    backend: str = "inprocess", progress: Callable[[int, int], None] | None = None
                    ) -> dict[str, Any]:
    """Run one of :data:`METHODS` ("chfl", "common", "local", "simple") and return its DESIGN result dict."""
    if method not in METHODS:
        raise InputError(f"unknown CHFL method {method!r}; choose from {list(METHODS)}")
    config = replace(config, progress=progress if progress is not None else config.progress)
    if method == "local":
        return run_local(partition, config)
    result = run_chfl(partition, replace(config, heads=METHOD_HEADS[method]), secure_agg=secure_agg, backend=backend)
    chosen = result["methods"][method]
    result.update(method=method, metrics={**result["metrics"], "accuracy": chosen["accuracy"],
                                          "clients": chosen["clients"]})
    return result


__all__ = ["CHFLConfig", "METHODS", "METHOD_HEADS", "REPORTED", "SERVER", "chfl_client", "chfl_parties",
           "local_client", "run_chfl", "run_chfl_method", "run_local", "secagg_config", "summarize"]
