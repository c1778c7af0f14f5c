"""Hierarchical baseline: STFL's structure trained end to end in plaintext."""

from __future__ import annotations

from baselines.centralized import join_by_id
from baselines.hierarchical import run_hierarchical
from securefl.algorithms import TrainConfig
from securefl.data import stfl_split
from tests.securefl.algorithms.helpers import majority_rate, synthetic

FAST = TrainConfig(epochs=40, batch_size=32, seed=2)


def test_learns_well_above_the_majority_rate_with_stfl_widths():
    split = stfl_split(synthetic(passive_features=(4, 7)), seed=1)
    joined = join_by_id(split)

    result = run_hierarchical(split, FAST)

    assert result["metrics"]["accuracy"] > majority_rate(joined.labels[joined.test]) + 0.2
    assert result["method"] == "hierarchical" and result["bytes"] == 0
    assert result["settings"]["latent_widths"] == {"passive1": 2, "passive2": 3}
    assert result["settings"]["hidden"] == 5 * (3 + 2 + 3)
    assert result["loss"][-1] < result["loss"][0]


def test_all_data_split_uses_more_training_rows():
    data = synthetic(n=150)

    plain = run_hierarchical(stfl_split(data, seed=0), FAST)
    everything = run_hierarchical(stfl_split(data, seed=0, all_data=True), FAST)

    assert everything["settings"]["train_rows"] == plain["settings"]["train_rows"] + 60
