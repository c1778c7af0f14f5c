"""GL's baselines (Obeidi, section 4.1): Local, FedAvg (padded) and Centralized, plus one entry point.

- Local: each client trains the same architecture on its own data; nothing leaves it.
- FedAvg: the whole model is federated (BatchAlignedFedAvg, unweighted, through secure
  aggregation). Feature spaces are padded with zeros to the union of the clients'
  columns (the paper's ``DataFrame.align``, after each client encoded its own
  columns) and labels use one globally fitted encoder (the union of the clients'
  classes), so every client has the same input and output width.
- Centralized: one model on the pooled table (covertype: the pooled train file, with
  ``wilderness_area`` kept as a feature as in the paper's centralized dataset,
  evaluated on the pooled validation file because the pooled test file is missing).

:func:`run_gl_method` is what the CLI and the benchmark call.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from protocols.errors import InputError
from securefl.algorithms.gl import GLConfig, gl_client, method_result, run_federated, run_gl
from securefl.data.chfl_clients import class_indices
from securefl.data.gl_sets import ClientData, ClientTable, GLDataset, encode_client, encode_clients

METHODS = ("gl", "fedavg", "local", "centralized")


def pad_client(data: ClientData, union: Sequence[str]) -> ClientData:
    """``data`` with its features in ``union``'s order, zeros in the columns it lacks."""
    def pad(x: np.ndarray) -> np.ndarray:
        return pd.DataFrame(x, columns=list(data.features)).reindex(columns=list(union), fill_value=0.0) \
            .to_numpy(np.float32)

    return replace(data, x_train=pad(data.x_train), x_test=pad(data.x_test), features=tuple(union),
                   x_val=None if data.x_val is None else pad(data.x_val))


def padded_clients(tables: Sequence[ClientTable]) -> tuple[tuple[ClientData, ...], int]:
    """Clients encoded for FedAvg: global label encoder, features zero-padded to the union; and the class count."""
    classes = sorted({v for t in tables for v in t.train[t.label].dropna().unique().tolist()})
    encoded = [encode_client(t, classes=classes) for t in tables]
    union = list(dict.fromkeys(f for c in encoded for f in c.features))
    return tuple(pad_client(c, union) for c in encoded), len(classes)


def schema_client(table: ClientTable, *, columns: Sequence[str], classes: Sequence[str]) -> ClientData:
    """One client encoded for FedAvg alone, against the federation's schema (``--columns``, ``--classes``):
    what :func:`padded_clients` does for every client at once, with labels compared as text."""
    label = table.label
    extra = [c for c in table.train.columns if c != label and c not in columns]
    if extra:
        raise InputError(f"client {table.name!r}: column {extra[0]!r} is not among the federation's --columns"
                         f" {','.join(columns)}")

    def as_text(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(**{label: frame[label].map(lambda v: v if pd.isna(v) else str(v))})

    train, test = as_text(table.train), as_text(table.test)
    validation = None if table.validation is None else as_text(table.validation)
    class_indices(train[label].dropna(), name=table.name, label=label, classes=classes,
                  source="its training rows")  # a class outside the schema is a one-line error
    return pad_client(encode_client(replace(table, train=train, test=test, validation=validation),
                                    classes=classes), columns)


def run_local(clients: Sequence[ClientData], config: GLConfig, *, dataset: str = "gl",
              backend: str = "inprocess") -> dict[str, Any]:
    """Every client trains alone (no server, nothing sent)."""
    outcome = run_federated(clients, config, scope="none", backend=backend)
    return method_result("local", dataset, config, outcome, settings={"backend": backend, "federated": "nothing"})


def run_fedavg(tables: Sequence[ClientTable], config: GLConfig, *, dataset: str = "gl",
               backend: str = "inprocess") -> dict[str, Any]:
    """FedAvg over the whole (padded) model."""
    clients, n_classes = padded_clients(tables)
    outcome = run_federated(clients, config, scope="all", backend=backend, n_classes=n_classes)
    return method_result("fedavg", dataset, config, outcome, settings={
        "backend": backend, "federated": "whole model", "features": len(clients[0].features),
        "classes": n_classes, "aggregation": "secure (masked sums)" if config.secure else "plain"})


def pooled_table(dataset: GLDataset, tables: Sequence[ClientTable]) -> ClientTable:
    """The centralized baseline's table: the dataset's pooled files, or the clients' splits stacked
    (validation rows too, when every client has them, so ``GLConfig.select`` works as for Local)."""
    if dataset.pooled is not None:
        train, test = dataset.pooled
        return ClientTable("centralized", tables[0].label, train, test, evaluated_on="validation (pooled)")
    columns = {tuple(t.train.columns) for t in tables}
    if len(columns) != 1:
        raise InputError(f"dataset {dataset.name!r}: centralized needs the same columns at every client"
                         " (the paper reports no centralized baseline for disjoint feature spaces)")
    validation = (None if any(t.validation is None for t in tables)
                  else pd.concat([t.validation for t in tables], ignore_index=True))
    return ClientTable("centralized", tables[0].label, pd.concat([t.train for t in tables], ignore_index=True),
                       pd.concat([t.test for t in tables], ignore_index=True), validation=validation)


def run_centralized(dataset: GLDataset, tables: Sequence[ClientTable], config: GLConfig) -> dict[str, Any]:
    """One model on the pooled data (trained like one Local client)."""
    data = encode_client(pooled_table(dataset, tables))
    start = time.perf_counter()
    result = gl_client(None, data=data, config=config, scope="none")
    outcome = {"clients": [result], "seconds": time.perf_counter() - start}
    return method_result("centralized", dataset.name, config, outcome, settings={"federated": "nothing (pooled)"})


def run_gl_method(method: str, dataset: GLDataset, config: GLConfig, *, secure_agg: bool | None = None,
                  backend: str = "inprocess", progress=None) -> dict[str, Any]:
    """Run ``method`` ("gl", "fedavg", "local", "centralized") on ``dataset`` for ``config.seed``.

    ``secure_agg`` / ``progress`` override the config's ``secure`` / ``progress`` when given.
    Returns the DESIGN result object (method, dataset, seed, device, metrics, seconds, bytes, settings).
    """
    if method not in METHODS:
        raise InputError(f"unknown GL method {method!r}; choose one of {', '.join(METHODS)}")
    if not isinstance(dataset, GLDataset):
        raise InputError(f"dataset must be a GLDataset (load_registered(..., kind='gl') or load_csv_clients),"
                         f" got {type(dataset).__name__}")
    changes = {k: v for k, v in (("secure", secure_agg), ("progress", progress)) if v is not None}
    config = replace(config, **changes) if changes else config
    tables = dataset.split(config.seed)
    if method == "centralized":
        return run_centralized(dataset, tables, config)
    if method == "fedavg":
        return run_fedavg(tables, config, dataset=dataset.name, backend=backend)
    clients = encode_clients(tables)
    if method == "local":
        return run_local(clients, config, dataset=dataset.name, backend=backend)
    return run_gl(clients, config, dataset=dataset.name, backend=backend)


__all__ = ["METHODS", "pad_client", "padded_clients", "pooled_table", "run_centralized", "run_fedavg", "run_gl_method",
           "run_local", "schema_client"]
