"""Data for TDCD (Das & Patterson): silos split the columns, each silo's clients split the rows.

A :class:`TieredTable` is one table of samples (tabular rows, or images whose columns of
pixels the silos split). :func:`tiered_split` deals it out as the paper's system model
has it: the N silos hold disjoint blocks of features of every sample; inside silo j the
training (and test) rows are dealt to its K clients, each client holding its rows'
labels. Every split is random per seed; each silo deals its rows with its own stream,
so client k of one silo and client k of another hold different samples, and a hub's
projection (which of its clients holds a row) is real work.

Preprocessing follows the DESIGN rule: each client standardises its tabular columns on
its own training rows. The last silo's block gets a constant 1 column, the paper's
bias ("we use all 81 coordinates and add one for bias"). Images are scaled to [0, 1]
and normalised with MNIST's customary constants (not fitted on any rows).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from protocols.errors import InputError
from securefl.models.scaling import Standardizer
from securefl.runtime.seeds import SeedPlan

MIN_SLICE = 4
"""The narrowest image slice, in pixels, that :class:`securefl.models.silo.ImageSilo`'s two 2x2
poolings leave a pixel of."""

TASKS = ("regression", "classification")
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


@dataclass(frozen=True)
class TieredTable:
    """One dataset before it is dealt out: ``x`` rows x features (or rows x height x width)."""

    name: str
    task: str
    x: np.ndarray
    y: np.ndarray
    n_classes: int = 0

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise InputError(f"TieredTable.task must be one of {TASKS}, got {self.task!r}")
        if self.x.ndim not in (2, 3) or len(self.x) != len(self.y) or len(self.y) == 0:
            raise InputError(f"dataset {self.name!r}: x {self.x.shape} and y {self.y.shape} do not match")

    @property
    def image(self) -> bool:
        return self.x.ndim == 3

    @property
    def width(self) -> int:
        """What the silos split: features, or columns of pixels."""
        return int(self.x.shape[-1])


@dataclass(frozen=True)
class ClientShard:
    """What client ``k`` of silo ``j`` holds: its silo's features of its own rows, and their labels."""

    name: str
    silo: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class SiloLayout:
    """What hub ``j`` knows: which global row positions each of its clients holds, in the client's order."""

    silo: int
    hub: str
    clients: tuple[str, ...]
    train_rows: tuple[np.ndarray, ...]
    test_rows: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class TieredSplit:
    """A dealt-out table: per silo its layout (for the hub) and its clients' shards."""

    dataset: str
    task: str
    n_classes: int
    n_train: int
    n_test: int
    columns: tuple[tuple[int, int], ...]
    """Per silo, the [start, stop) of its features (or pixel columns) in the table."""
    layouts: tuple[SiloLayout, ...]
    shards: tuple[tuple[ClientShard, ...], ...]

    @property
    def silos(self) -> int:
        return len(self.layouts)


def hub_name(silo: int) -> str:
    return f"hub{silo}"


def client_name(silo: int, client: int) -> str:
    return f"silo{silo}-client{client}"


def tiered_split(table: TieredTable, *, silos: int, clients: int, seed: int, test_fraction: float = 0.2,
                 max_train: int | None = None) -> TieredSplit:
    """Deal ``table`` to ``silos`` silos of ``clients`` clients each (see the module docstring)."""
    _check_layout(table, silos, clients, test_fraction, max_train)
    plan = SeedPlan(seed)
    train, test = split_positions(len(table.y), seed, test_fraction=test_fraction, max_train=max_train)
    if len(train) < 2 * clients or len(test) < clients:
        raise InputError(f"dataset {table.name!r}: {len(train)} training and {len(test)} test rows are too few"
                         f" for {clients} clients per silo")
    bounds = np.linspace(0, table.width, silos + 1).round().astype(int)
    columns = tuple((int(bounds[j]), int(bounds[j + 1])) for j in range(silos))
    layouts, shards = [], []
    for j, (start, stop) in enumerate(columns):
        rng = plan.numpy(f"tdcd:deal:silo{j}")
        train_rows = _deal(len(train), clients, rng)
        test_rows = _deal(len(test), clients, rng)
        names = tuple(client_name(j, k) for k in range(clients))
        layouts.append(SiloLayout(j, hub_name(j), names, train_rows, test_rows))
        last = j == silos - 1
        shards.append(tuple(
            make_shard(names[k], j, table.x[train[train_rows[k]]][..., start:stop], table.y[train[train_rows[k]]],
                       table.x[test[test_rows[k]]][..., start:stop], table.y[test[test_rows[k]]],
                       bias=last and not table.image) for k in range(clients)))
    return TieredSplit(table.name, table.task, table.n_classes, len(train), len(test), columns,
                       tuple(layouts), tuple(shards))


def joined_training(split: TieredSplit) -> tuple[list[np.ndarray], np.ndarray]:
    """Every silo's training block and the labels, back in global row order: what no party holds,
    for references (the ridge optimum, a plain re-statement of Algorithm 1) to compare with."""
    blocks, y = [], np.zeros(split.n_train)
    for layout, shards in zip(split.layouts, split.shards):
        block = np.zeros((split.n_train, *shards[0].x_train.shape[1:]))
        for rows, shard in zip(layout.train_rows, shards):
            block[rows], y[rows] = shard.x_train, shard.y_train
        blocks.append(block)
    return blocks, y


def _check_layout(table: TieredTable, silos: int, clients: int, test_fraction: float,
                  max_train: int | None) -> None:
    for name, value in (("silos", silos), ("clients", clients)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive int, got {value!r}")
    if silos > table.width:
        raise InputError(f"dataset {table.name!r} has {table.width} feature columns, too few for {silos} silos")
    if table.image and table.width // silos < MIN_SLICE:  # np.linspace's rounding gives some slices this width
        raise InputError(f"dataset {table.name!r}: {silos} silos cut its {table.width}-pixel-wide images into slices"
                         f" under {MIN_SLICE} pixels, too narrow for the CNN's two poolings; use at most"
                         f" {table.width // MIN_SLICE} silos")
    if not 0 < test_fraction < 1:
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    if max_train is not None and (isinstance(max_train, bool) or not isinstance(max_train, int) or max_train < 1):
        raise InputError(f"max_train must be a positive int or None, got {max_train!r}")


def _deal(n: int, clients: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Positions 0..n-1 dealt evenly at random to ``clients`` clients, each client's sorted."""
    return tuple(np.sort(part) for part in np.array_split(rng.permutation(n), clients))


def split_positions(n_rows: int, seed: int, *, test_fraction: float = 0.2,
                    max_train: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The training and test positions (each sorted) of ``n_rows`` samples in their global order,
    drawn from the seed alone, so every hub draws the same split."""
    plan = SeedPlan(seed)
    order = plan.numpy("tdcd:split").permutation(n_rows)
    n_test = max(1, int(round(test_fraction * n_rows)))
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    if max_train is not None and len(train) > max_train:
        train = np.sort(plan.numpy("tdcd:subsample").choice(train, size=max_train, replace=False))
    return train, test


def make_shard(name: str, silo: int, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
               y_test: np.ndarray, *, bias: bool) -> ClientShard:
    """A client's shard from its raw rows: images normalised; tabular columns standardised on its
    own training rows, with the constant bias column appended if ``bias``."""
    if x_train.ndim == 3:
        x_train, x_test = (_normalise_image(x) for x in (x_train, x_test))
    else:  # a constant column's float std is ~1e-24, not 0: Standardizer keeps its scale 1
        scaler = Standardizer.fit(x_train)
        x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
        if bias:
            x_train, x_test = (np.hstack([x, np.ones((len(x), 1))]) for x in (x_train, x_test))
    return ClientShard(name, silo, x_train.astype(np.float32), y_train, x_test.astype(np.float32), y_test)


def _normalise_image(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.float32) / 255.0) - MNIST_MEAN) / MNIST_STD


def load_regression_csv(paths: Sequence[Path], *, header: bool = False) -> TieredTable:
    """A numeric CSV whose last column is the target (the UCI regression files have no header row)."""
    import pandas as pd

    (path,) = paths
    try:
        frame = pd.read_csv(path, header=0 if header else None)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: not a readable CSV ({exc})") from None
    values = frame.to_numpy()
    if values.ndim != 2 or values.shape[1] < 2 or not np.issubdtype(values.dtype, np.number):
        raise InputError(f"{path}: expected numeric columns, the last one the target")
    if not np.isfinite(values).all():
        raise InputError(f"{path}: holds missing or non-finite values")
    return TieredTable(Path(path).name.split(".")[0], "regression", values[:, :-1].astype(np.float64),
                       values[:, -1].astype(np.float64))


def load_mnist_idx(paths: Sequence[Path]) -> TieredTable:
    """MNIST from its IDX files (images, labels), gzip-compressed as distributed."""
    images_path, labels_path = paths
    images, labels = _read_idx(images_path, 3), _read_idx(labels_path, 1)
    if len(images) != len(labels):
        raise InputError(f"{images_path} has {len(images)} images but {labels_path} {len(labels)} labels")
    return TieredTable("mnist", "classification", images, labels.astype(np.int64), n_classes=10)


def _read_idx(path: Path, dims: int) -> np.ndarray:
    """An IDX file of unsigned bytes (magic 0x00000800 + dims), checked against its header."""
    with gzip.open(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 4 + 4 * dims or raw[:3] != b"\x00\x00\x08" or raw[3] != dims:
        raise InputError(f"{path}: not an IDX file of {dims}-dimensional unsigned bytes")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise InputError(f"{path}: the header says {shape} but the file holds {body.size} values")
    return body.reshape(shape)


__all__ = ["ClientShard", "SiloLayout", "TASKS", "TieredSplit", "TieredTable", "client_name", "hub_name",
           "joined_training", "load_mnist_idx", "load_regression_csv", "make_shard", "split_positions",
           "tiered_split"]
