"""TDCD with natural clients: each client holds its own rows (IDs, its silo's columns, the target).

Over the network nobody deals rows: client k of silo j already holds some samples'
features of its silo and their targets, in its own CSV (``--csv FILE --id-column id
--label y``). Its hub collects its clients' IDs (one organisation's bookkeeping), the
hubs check that every silo holds the same samples, order them by ID, and draw the
80/20 split from the seed (:func:`securefl.data.tdcd_sets.split_positions`), so they
agree without exchanging IDs. :func:`positions_by_ids` is that bookkeeping;
:func:`natural_split` runs it for every silo in one process, the reference a networked
run reproduces.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from protocols.channels.crypto import transcript
from protocols.errors import InputError
from securefl.data.tdcd_sets import ClientShard, SiloLayout, TieredSplit, make_shard, split_positions


@dataclass(frozen=True)
class ClientRows:
    """One client's raw rows: sample IDs, its silo's feature columns, the target (a float, or a
    class index into the federation's ``--classes``)."""

    name: str
    ids: tuple[str, ...]
    x: np.ndarray
    y: np.ndarray
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientPositions:
    """Which of a client's rows train and test (its local indices, in global order) and their global ranks."""

    train_local: np.ndarray
    test_local: np.ndarray
    train_rows: np.ndarray
    test_rows: np.ndarray


def load_client_csv(path: str | Path, *, name: str, id_column: str, label: str,
                    classes: Sequence[str] | None = None) -> ClientRows:
    """A TDCD client's own CSV: an ID column, numeric feature columns and a numeric target, or with
    ``classes`` (the federation's class values, as text) a class label that must be one of them."""
    from securefl.data.chfl_clients import class_indices
    from securefl.data.tables import exact_ids, read_labelled_csv, read_text_column

    path, frame = read_labelled_csv(path, label=label, also=("--id-column", id_column), classify=False)
    # as the file spells them: pandas would read "007" and "7" both as the number 7
    ids = tuple(exact_ids(read_text_column(path, id_column), str(path), id_column))
    if any("\n" in i for i in ids):
        raise InputError(f"{path}: an ID in column {id_column!r} holds a line break")
    features = [c for c in frame.columns if c not in (id_column, label)]
    if not features:
        raise InputError(f"{path}: no feature columns besides {id_column!r} and {label!r}")
    for column in (*features, *(() if classes else (label,))):
        _check_numeric(path, frame[column], label=column == label)
    y = (class_indices(frame[label], name=name, label=label, classes=classes, source=str(path)) if classes
         else frame[label].to_numpy(np.float64))
    return ClientRows(name, ids, frame[features].to_numpy(np.float64), y, tuple(map(str, features)))


def _check_numeric(path: Path, values: Any, *, label: bool) -> None:
    """A feature (or a regression target) must be numbers in every row; the error names the first bad cell."""
    from pandas.api.types import is_numeric_dtype

    from securefl.data.tables import not_numeric

    if not is_numeric_dtype(values):
        if label:
            raise not_numeric(path, values.name, values, hint="a class label needs --classes, the federation's"
                              " class values")
        raise not_numeric(path, values.name, values)
    empty = np.flatnonzero(np.isnan(values.to_numpy(np.float64)))
    if len(empty):
        raise InputError(f"{path}: column {values.name!r} is empty in {len(empty)} rows (first: data row"
                         f" {empty[0] + 1}); every row needs a value")


def id_digest(ids: Sequence[str]) -> str:
    """SHA-256 of the sorted IDs: hubs compare it to check that every silo holds the same samples."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


LABEL_TAG_BYTES = 16


def label_tag(key: bytes, ids: Sequence[str], y: np.ndarray) -> bytes:
    """Sum mod 2^128 of HMAC-SHA256(key, (ID, label)) over a client's rows, as 16 bytes.

    Silos whose clients hold the same label for every ID get the same total however the
    rows are spread over clients; without ``key`` a tag says nothing of the labels (a hub
    that knows the IDs cannot test guesses). Labels compare as float64 (class indices too).
    """
    total = 0
    for sample, value in zip(ids, np.asarray(y, dtype=np.float64)):
        row = transcript("tdcd label", sample, struct.pack(">d", float(value) + 0.0))  # + 0.0: -0.0 is 0.0
        total += int.from_bytes(hmac.digest(key, row, "sha256")[:LABEL_TAG_BYTES], "big")
    return (total % 2 ** (8 * LABEL_TAG_BYTES)).to_bytes(LABEL_TAG_BYTES, "big")


def add_tags(tags: Sequence[bytes]) -> bytes:
    """The sum mod 2^128 of :func:`label_tag` values: a silo's tag from its clients'."""
    total = sum(int.from_bytes(t, "big") for t in tags) % 2 ** (8 * LABEL_TAG_BYTES)
    return total.to_bytes(LABEL_TAG_BYTES, "big")


def check_same_labels(silos: Sequence[tuple[str, Sequence[ClientRows]]]) -> None:
    """InputError unless every silo's clients hold the same label for each sample (one process only:
    this reads every label; over the network the hubs compare :func:`label_tag` sums instead)."""
    first_hub, first = silos[0]
    labels = {i: v for c in first for i, v in zip(c.ids, np.asarray(c.y, dtype=np.float64))}
    for hub, clients in silos[1:]:
        differ = sorted(i for c in clients for i, v in zip(c.ids, np.asarray(c.y, dtype=np.float64))
                        if labels.get(i) != v)
        if differ:
            raise InputError(f"silos {first_hub!r} and {hub!r} hold different labels for {len(differ)} samples"
                             f" (e.g. ID {differ[0]!r}); every silo's clients must hold the same target")


def positions_by_ids(id_lists: Sequence[Sequence[str]], seed: int, *, where: str = "the silo",
                     names: Sequence[str] | None = None) -> tuple[list[ClientPositions], int, int]:
    """A hub's bookkeeping: each client's training and test rows from the seed and the sorted IDs;
    also the numbers of training and test rows. InputError (naming the client by ``names``) when
    a client is left without a training row: it could fit neither its scaler nor its model."""
    everyone = [i for ids in id_lists for i in ids]
    if len(set(everyone)) != len(everyone):
        raise InputError(f"{where}: a sample ID is held by more than one client (a silo's clients split its rows)")
    order = {sample: rank for rank, sample in enumerate(sorted(everyone))}
    train, test = split_positions(len(order), seed)
    train_rank, test_rank = np.full(len(order), -1), np.full(len(order), -1)
    train_rank[train], test_rank[test] = np.arange(len(train)), np.arange(len(test))
    out = []
    for ids in id_lists:
        glob = np.array([order[i] for i in ids], dtype=np.int64)
        parts = []
        for rank in (train_rank, test_rank):
            local = np.flatnonzero(rank[glob] >= 0)
            local = local[np.argsort(rank[glob[local]], kind="stable")]
            parts += [local, rank[glob[local]]]
        if parts[0].size == 0:
            who = repr(names[len(out)]) if names is not None else f"#{len(out) + 1}"
            raise InputError(f"{where}: client {who} has no training rows after seed {seed}'s 80/20 split"
                             f" (it holds {len(ids)}); give it more rows or use another --seed")
        out.append(ClientPositions(parts[0], parts[2], parts[1], parts[3]))
    return out, len(train), len(test)


def check_same_columns(hub: str, columns: Sequence[Sequence[str]], clients: Sequence[str]) -> None:
    """InputError unless every client of silo ``hub`` holds the same feature columns, in one order."""
    for name, cols in zip(clients[1:], columns[1:]):
        if list(cols) != list(columns[0]):
            raise InputError(f"silo {hub!r}: client {name!r} has columns {list(cols)}, client {clients[0]!r}"
                             f" {list(columns[0])}; a silo's clients hold the same features")


def client_shard(rows: ClientRows, silo: int, train_local: np.ndarray, test_local: np.ndarray, *,
                 bias: bool) -> ClientShard:
    """The shard a client trains on: its training and test rows (local indices, in global order),
    standardised on its training rows."""
    return make_shard(rows.name, silo, rows.x[train_local], rows.y[train_local], rows.x[test_local],
                      rows.y[test_local], bias=bias)


def natural_split(silos: Sequence[tuple[str, Sequence[ClientRows]]], seed: int, *, name: str = "csv",
                  n_classes: int = 0) -> TieredSplit:
    """Every silo's natural clients in one process, as their hubs would set them up over the network;
    ``n_classes`` > 0 for class labels (:func:`load_client_csv` with ``classes``), else regression."""
    digests = {id_digest([i for c in clients for i in c.ids]) for _, clients in silos}
    if len(digests) != 1:
        raise InputError("the silos hold different samples; align their IDs first (securefl psi)")
    check_same_labels(silos)
    layouts, shards, columns, start = [], [], [], 0
    for j, (hub, clients) in enumerate(silos):
        check_same_columns(hub, [c.columns for c in clients], [c.name for c in clients])
        positions, n_train, n_test = positions_by_ids([c.ids for c in clients], seed, where=f"silo {hub!r}",
                                                      names=[c.name for c in clients])
        layouts.append(SiloLayout(j, hub, tuple(c.name for c in clients), tuple(p.train_rows for p in positions),
                                  tuple(p.test_rows for p in positions)))
        shards.append(tuple(client_shard(c, j, p.train_local, p.test_local, bias=j == len(silos) - 1)
                            for c, p in zip(clients, positions)))
        width = clients[0].x.shape[1]
        columns.append((start, start + width))
        start += width
    task = "classification" if n_classes else "regression"
    return TieredSplit(name, task, n_classes, n_train, n_test, tuple(columns), tuple(layouts), tuple(shards))


__all__ = ["ClientPositions", "ClientRows", "LABEL_TAG_BYTES", "add_tags", "check_same_columns", "check_same_labels",
           "client_shard", "id_digest", "label_tag", "load_client_csv", "natural_split", "positions_by_ids"]
