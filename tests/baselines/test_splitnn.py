"""The plaintext split NN: widths, determinism, learning, input checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from baselines.splitnn import (SplitNNConfig, Widths, active_share, batch_positions, batches, passive_weights,
                              run_splitnn, train_splitnn)
from protocols.errors import InputError
from securefl.data import PartyTable, VerticalDataset, VerticalSplit, stfl_split

TINY = dict(bottom_active=4, bottom_passive=3, interactive=4, top=3)


def tiny_split(rows: int = 60, seed: int = 0, passives: int = 1) -> VerticalSplit:
    """Separable data: 3 active features (+ labels), 2 per passive party in another row
    order, each passive party missing two of the active party's IDs and holding three others."""
    rng = np.random.default_rng(seed)
    xa, xp = rng.normal(size=(rows, 3)), rng.normal(size=(rows, 2))
    labels = (xa[:, 0] + 0.5 * xa[:, 1] + xp[:, 0] > 0).astype(np.int64)
    ids = [f"u{i:03d}" for i in range(rows)]
    active = PartyTable("active", tuple(ids), xa, ("a0", "a1", "a2"), labels=labels)
    order = rng.permutation(rows)[2:]
    extra = rng.normal(size=(3, 2))
    parties = tuple(
        PartyTable(f"passive{k}" if passives > 1 else "passive",
                   tuple(ids[i] for i in order) + ("x1", "x2", "x3"),
                   np.vstack([xp[order], extra]), ("p0", "p1"))
        for k in range(passives))
    return stfl_split(VerticalDataset("tiny", active, parties), seed=seed)


def test_widths_follow_the_paper_rule_unless_given() -> None:
    assert SplitNNConfig().widths(10, 20) == Widths(50, 100, 50, 50)
    assert SplitNNConfig(interactive=7).widths(10, 20) == Widths(50, 100, 7, 7)
    assert SplitNNConfig(**TINY).widths(10, 20) == Widths(4, 3, 4, 3)


def test_batch_order_is_seeded_and_covers_every_row() -> None:
    ids = [f"r{i}" for i in range(10)]
    first = list(batches(ids, 4, seed=1, epoch=0))

    assert [len(b) for b in first] == [4, 4, 2]
    assert sorted(sum(first, [])) == sorted(ids)
    assert first == list(batches(list(reversed(ids)), 4, seed=1, epoch=0))
    assert first != list(batches(ids, 4, seed=1, epoch=1))


@pytest.mark.parametrize("epoch", [0, 3])
def test_batch_positions_follow_the_id_batches_over_the_sorted_ids(epoch: int) -> None:
    # Arrange: IDs whose sorted order differs from their given order
    ids = [f"r{i}" for i in (5, 1, 9, 0, 7, 3, 8, 2, 6, 4, 10)]
    ordered = sorted(ids)
    # Act
    positions = list(batch_positions(len(ids), 4, 1, epoch, torch.device("cpu")))
    # Assert: position batches name the very IDs of the ID batches
    assert [[ordered[i] for i in p.tolist()] for p in positions] == list(batches(ids, 4, seed=1, epoch=epoch))


def test_training_is_deterministic_and_learns() -> None:
    split = tiny_split(rows=120)
    config = SplitNNConfig(epochs=30, batch_size=16, lr=0.02, interactive_lr=0.5, **TINY)

    one, two = train_splitnn(split, config), train_splitnn(split, config)

    assert one["metrics"] == two["metrics"]
    assert all(np.array_equal(one["weights"][k], two["weights"][k]) for k in one["weights"])
    assert one["metrics"]["accuracy"] >= 0.8
    assert one["train_rows"] + one["test_rows"] < 120 * 0.6 + 1


def test_progress_and_result_fields() -> None:
    seen: list[tuple[int, int]] = []
    result = run_splitnn(tiny_split(), SplitNNConfig(epochs=2, progress=lambda e, t: seen.append((e, t)),
                                                     **TINY))

    assert seen == [(1, 2), (2, 2)]
    assert {"method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings"} <= set(result)
    assert "progress" not in result["settings"] and "weights" not in result


@pytest.mark.parametrize("kwargs", [dict(epochs=0), dict(batch_size=-1), dict(lr=0.0),
                                    dict(interactive_lr=float("inf")), dict(top=0), dict(seed=-1),
                                    dict(device=3), dict(progress=5), dict(epochs=True)])
def test_bad_config(kwargs: dict) -> None:
    with pytest.raises(InputError):
        SplitNNConfig(**kwargs)


def signed_labels(split: VerticalSplit) -> VerticalSplit:
    """``split`` with the active party's labels as -1/+1 instead of 0/1."""
    from dataclasses import replace

    active = split.dataset.active
    signed = PartyTable(active.name, active.ids, active.features, active.feature_names, labels=2 * active.labels - 1)
    return replace(split, dataset=VerticalDataset(split.dataset.name, signed, split.dataset.passive))


def test_labels_other_than_0_1_are_refused_not_scored_as_wrong() -> None:
    # Arrange: -1/+1 labels would train BCE on -1 and score every prediction wrong
    split = signed_labels(tiny_split())
    # Act / Assert
    with pytest.raises(InputError, match=r"active party 'active': binary classification needs labels 0/1"):
        train_splitnn(split, SplitNNConfig(epochs=1))


def test_more_than_one_passive_party_is_refused() -> None:
    with pytest.raises(InputError, match="one passive party"):
        train_splitnn(tiny_split(passives=2), SplitNNConfig(epochs=1))


@pytest.mark.parametrize("share", [active_share, passive_weights])
def test_unseeded_initial_shares_take_53_os_bits_per_entry(monkeypatch, share):
    # Arrange: record what the OS is asked for (a 64-bit seed for a whole share made it one of 2^64)
    import protocols.randomness as randomness

    asked = []
    real = randomness.os.urandom
    monkeypatch.setattr(randomness.os, "urandom", lambda n: asked.append(n) or real(n))
    # Act
    values = share((3, 4), 0.5, None)
    # Assert
    assert asked == [8 * 12] and values.shape == (3, 4) and np.all(np.abs(values) <= 0.5)
    assert len(np.unique(values)) == 12
