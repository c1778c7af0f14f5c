"""Global Layers (GL; Obeidi) with BatchAlignedFedAvg, as party roles over a Transport.

Every client k holds a :class:`~securefl.models.tabular.GLModel` w_k = (u_k, omega_k, v_k)
sized for its own features and classes; only omega (MLP layers 2-4) is federated.
Each local epoch runs exactly ``batches`` steps on every client (batch size about
n_k / batches), so all clients make the same number of updates and the average is
unweighted (a_k = 1). Aggregation is once per epoch (the authors' released code,
whose numbers the paper reports) or after every batch step (the paper's Algorithm 1),
``GLConfig.aggregate``. Every average runs through the protocol layer's secure
aggregation (the server sees only sums; :mod:`securefl.runtime.federated`);
``secure=False`` sends the same vectors in clear for timing comparisons. The settings
(:class:`GLConfig`) live in :mod:`securefl.algorithms.gl_config`, re-exported here.

The same client role trains FedAvg (``scope="all"``: the whole model federated) and
Local (``scope="none"``: nothing federated, no server); see :mod:`baselines.gl_baselines`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from protocols.errors import InputError
from protocols.transport import Transport, relayed, run_parties
from securefl.algorithms.gl_config import (AGGREGATE, PAPER_SCHEDULE, SCOPES, SERVER, SWITCHES, GLConfig,
                                           paper_config, switch_default, switches)
from securefl.algorithms.gl_select import EpochPicker, check_validation
from securefl.algorithms.training import intra_op_threads
from securefl.data.gl_sets import ClientData
from securefl.models.tabular import GLModel, count
from securefl.runtime import SeedPlan, finite_scores, resolve_device
from securefl.runtime.classification import classification_report
from securefl.runtime.federated import averaging_server, client_average, flatten


def as_tensor(x: np.ndarray, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A private, writable copy of ``x`` on ``device`` (made once before training)."""
    return torch.from_numpy(np.array(x, copy=True)).to(device=device, dtype=dtype)


def build_model(data: ClientData, config: GLConfig, *, n_classes: int | None = None) -> GLModel:
    """The client's model, initialised from the run seed: equal layers start equal on every client."""
    n_classes = len(data.classes) if n_classes is None else n_classes
    plan = SeedPlan(config.seed)
    model = GLModel(data.x_train.shape[1], 1 if n_classes == 2 else n_classes, config.shape)
    return model.seed_(lambda part: plan.torch(f"init:{part}"))


def batch_indices(n: int, batches: int, generator: torch.Generator) -> list[torch.Tensor]:
    """A fresh permutation of ``n`` rows cut into exactly ``batches`` near-equal batches."""
    if n < 2 * batches:
        raise InputError(f"a client with {n} training rows cannot fill {batches} batches of 2+ rows")
    return list(torch.randperm(n, generator=generator).tensor_split(batches))


def loss(model: GLModel, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy for one output column, cross-entropy otherwise."""
    logits = model(x)
    if logits.shape[1] == 1:
        return F.binary_cross_entropy_with_logits(logits[:, 0], y.float())
    return F.cross_entropy(logits, y)


def probabilities(model: GLModel, x: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    """Class probabilities (P(class 1) for a binary model) in evaluation mode."""
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(x[i:i + chunk]) for i in range(0, len(x), chunk)])
    model.train()
    probs = torch.sigmoid(logits[:, 0]) if logits.shape[1] == 1 else torch.softmax(logits, 1)
    return probs.cpu().numpy().astype(np.float64)


def federated_tensors(model: GLModel, scope: str, *, bn_stats: bool = True) -> list[torch.Tensor]:
    """What ``scope`` federates: GL's omega, FedAvg's whole model, or nothing (Local); with
    ``bn_stats`` the batch-norm running statistics of those layers too."""
    if scope == "none":
        return []
    return (model.global_tensors if scope == "global" else model.all_tensors)(bn_stats=bn_stats)


def aggregate(transport: Transport, tensors: list[torch.Tensor], config: GLConfig, rnd: int) -> list[torch.Tensor]:
    """Average ``tensors`` with the other clients, then omega_k <- eta omega_k + (1 - eta) omega
    (Algorithm 1); returns the average omega, which the next round's broadcast brings."""
    own = [t.detach().clone() for t in tensors] if config.eta != 0.0 else None
    client_average(transport, server=SERVER, tensors=tensors, config=config.secagg(), round=rnd)
    average = [t.detach().clone() for t in tensors]
    if own is not None:
        with torch.no_grad():
            for t, mine in zip(tensors, own):
                t.mul_(1.0 - config.eta).add_(mine, alpha=config.eta)
    return average


def adopt(tensors: list[torch.Tensor], average: list[torch.Tensor] | None) -> None:
    """The server's broadcast: load the last round's average (if any) into the federated tensors."""
    if average is not None:
        with torch.no_grad():
            for t, avg in zip(tensors, average):
                t.copy_(avg)


def gl_client(transport: Transport | None, *, data: ClientData, config: GLConfig, scope: str = "global",
              n_classes: int | None = None) -> dict[str, Any]:
    """One client's whole run: BatchAlignedFedAvg training over ``scope``, then evaluation."""
    if scope not in SCOPES:
        raise InputError(f"scope must be one of {SCOPES}, got {scope!r}")
    device = resolve_device(config.device)
    with intra_op_threads(config.threads):
        model = build_model(data, config, n_classes=n_classes).to(device)
        shared = federated_tensors(model, scope, bn_stats=config.federate_bn_stats)
        opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, foreach=True)
        gen = SeedPlan(config.seed).torch(f"batches:{data.name}")
        x, y = as_tensor(data.x_train, device), as_tensor(data.y_train, device, torch.int64)
        picker = EpochPicker(config.select, data, device)
        start, rnd, rounds, average = time.perf_counter(), 0, config.rounds(), None
        for epoch in range(config.epochs):
            adopt(shared, average)  # the round starts from the server's broadcast
            for idx in batch_indices(len(y), config.batches, gen):
                opt.zero_grad(set_to_none=True)
                loss(model, x[idx], y[idx]).backward()
                opt.step()
                if scope != "none" and config.aggregate == "batch" and rnd < rounds:
                    average, rnd = aggregate(transport, shared, config, rnd), rnd + 1
            picker.see(model, epoch + 1, probabilities)  # the client's own state, before the average
            if scope != "none" and config.aggregate == "epoch" and rnd < rounds:
                average, rnd = aggregate(transport, shared, config, rnd), rnd + 1
            if config.progress is not None:
                config.progress(epoch + 1, config.epochs)
        if config.final_average:
            adopt(shared, average)  # a last broadcast: evaluated with the last round's average
        train_seconds = time.perf_counter() - start
        federated_values = flatten(shared) if shared else None  # the last round's, whichever epoch is scored
        selected = picker.restore(model, config.epochs)
        probs = probabilities(model, as_tensor(data.x_test, device))
    metrics, classes = classification_report(data.y_test, finite_scores(probs, who=f"client {data.name!r}"))
    return {"client": data.name, "metrics": metrics, "per_class": classes,
            "train_seconds": train_seconds, "train_rows": int(len(data.y_train)),
            "test_rows": int(len(data.y_test)), "evaluated_on": data.evaluated_on,
            "parameters": count(list(model.parameters())), "federated": count(shared),
            "federated_values": federated_values, "selected_epoch": selected,
            **({"validation": {config.select: picker.history}} if picker.history else {})}


def check_clients(clients: Sequence[ClientData], config: GLConfig) -> None:
    """Clear errors for unusable client data before any party starts."""
    if len(clients) < 2:
        raise InputError(f"GL needs at least two clients, got {len(clients)}")
    names = [c.name for c in clients]
    if len(set(names)) != len(names) or SERVER in names:
        raise InputError(f"client names must be unique and not {SERVER!r}, got {names}")
    for c in clients:
        check_client(c, config)


def check_client(client: ClientData, config: GLConfig) -> None:
    """InputError if ``client`` has too few training rows for ``config.batches`` or no rows to evaluate."""
    if len(client.y_train) < 2 * config.batches:
        raise InputError(f"client {client.name!r} has {len(client.y_train)} training rows; GLConfig.batches="
                         f"{config.batches} needs at least {2 * config.batches}")
    if len(client.y_test) == 0:
        raise InputError(f"client {client.name!r} has no {client.evaluated_on} rows to evaluate on")
    check_validation(config.select, client)


def run_federated(clients: Sequence[ClientData], config: GLConfig, *, scope: str, backend: str = "inprocess",
                  n_classes: int | None = None, record: bool = False) -> dict[str, Any]:
    """Run every client (and the averaging server unless ``scope="none"``); the raw per-party results."""
    check_clients(clients, config)
    quiet = replace(config, progress=None)  # the first client reports progress
    roles: dict[str, Any] = {c.name: gl_client for c in clients}
    kwargs: dict[str, dict[str, Any]] = {
        c.name: {"data": c, "scope": scope, "n_classes": n_classes, "config": quiet} for c in clients}
    if scope != "none" and config.rounds() > 0:  # one epoch without final_average sends nothing
        roles[SERVER] = averaging_server
        kwargs[SERVER] = {"clients": [c.name for c in clients], "rounds": config.rounds(), "config": config.secagg()}
    if len(roles) < 2:
        raise InputError("a run needs at least two parties")
    with relayed(config.progress, backend) as progress:
        kwargs[clients[0].name]["config"] = replace(config, progress=progress)
        run = run_parties(roles, kwargs=kwargs, backend=backend, timeout=config.stage_timeout, record=record)
    return {"run": run, "clients": [run.results[c.name] for c in clients],
            "round_seconds": run.results.get(SERVER, {}).get("round_seconds", [])}


def method_result(method: str, dataset: str, config: GLConfig, outcome: dict[str, Any], *,
                  settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The DESIGN result object of one GL-family run (means over clients, per client under ``clients``)."""
    clients = outcome["clients"]
    per_client = {c["client"]: {**c["metrics"], "evaluated_on": c["evaluated_on"], "test_rows": c["test_rows"],
                                "train_rows": c["train_rows"], "parameters": c["parameters"],
                                "federated_parameters": c["federated"], "per_class": c["per_class"],
                                **({"selected_epoch": c["selected_epoch"], "validation": c["validation"]}
                                   if "validation" in c else {})}
                  for c in clients}
    means = {k: float(np.nanmean([c["metrics"][k] for c in clients])) for k in clients[0]["metrics"]}
    run = outcome.get("run")
    rounds = outcome.get("round_seconds", [])
    return {"method": method, "dataset": dataset, "seed": config.seed, "device": str(resolve_device(config.device)),
            "metrics": {**means, "clients": per_client},
            "seconds": run.seconds if run is not None else outcome["seconds"],
            "bytes": run.bytes if run is not None else 0,
            "round_seconds": rounds, "rounds": len(rounds),
            "mean_round_seconds": float(np.mean(rounds)) if rounds else None,
            "settings": {**config.settings(), **(settings or {})}, **(run.gpu_fields() if run is not None else {})}


def run_gl(clients: Sequence[ClientData], config: GLConfig, *, dataset: str = "gl", backend: str = "inprocess"
           ) -> dict[str, Any]:
    """Run GL (each client's own features and classes; only omega federated) and report."""
    if not isinstance(config, GLConfig):
        raise InputError(f"run_gl needs a GLConfig, got {type(config).__name__}")
    outcome = run_federated(clients, config, scope="global", backend=backend)
    return method_result("gl", dataset, config, outcome, settings={
        "backend": backend, "federated": "global layers (MLP layers 2-4)",
        "aggregation": "secure (masked sums)" if config.secure else "plain"})


__all__ = ["AGGREGATE", "GLConfig", "PAPER_SCHEDULE", "SCOPES", "SERVER", "SWITCHES", "adopt", "aggregate", "as_tensor",
           "batch_indices", "build_model", "check_client", "check_clients", "federated_tensors", "gl_client", "loss",
           "method_result", "paper_config", "probabilities", "run_federated", "run_gl", "switch_default", "switches"]
