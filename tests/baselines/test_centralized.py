"""Centralized baseline: all features joined by ID, one MLP, the common result shape."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.centralized import join_by_id, run_centralized
from protocols.errors import InputError
from securefl.algorithms import STFLConfig, TrainConfig
from securefl.data import PartyTable, VerticalDataset, stfl_split
from tests.securefl.algorithms.helpers import majority_rate, synthetic

FAST = TrainConfig(epochs=40, batch_size=32, seed=1)


def test_learns_well_above_the_majority_rate_and_reports_the_common_fields():
    split = stfl_split(synthetic(passive_features=(4, 5)), seed=0)
    joined = join_by_id(split)

    result = run_centralized(split, FAST)

    assert result["metrics"]["accuracy"] > majority_rate(joined.labels[joined.test]) + 0.2
    assert result["method"] == "centralized" and result["dataset"] == "synthetic"
    assert (result["seed"], result["device"], result["bytes"]) == (1, "cpu", 0)
    assert result["settings"]["input_features"] == 3 + 4 + 5
    assert result["settings"]["hidden"] == 5 * 12
    assert set(result["phases"]) == {"training", "inference"}
    assert result["settings"]["train_rows"] == 120 and result["settings"]["test_rows"] == 60


def test_all_data_split_trains_on_the_self_taught_rows_too():
    data = synthetic()
    plain, everything = stfl_split(data, seed=0), stfl_split(data, seed=0, all_data=True)

    result = run_centralized(everything, FAST)

    assert result["settings"]["train_rows"] == 240 and result["settings"]["all_data"] is True
    assert join_by_id(plain).test.sum() == join_by_id(everything).test.sum()


def test_accepts_an_stfl_config_and_is_reproducible():
    split = stfl_split(synthetic(n=120), seed=0)
    config = STFLConfig(epochs=5, vae_epochs=1, seed=4)

    assert run_centralized(split, config)["loss"] == pytest.approx(run_centralized(split, config)["loss"],
                                                                   rel=1e-5)


def test_join_matches_rows_by_id_not_by_position():
    split = stfl_split(synthetic(n=100), seed=0)
    joined = join_by_id(split)
    passive = split.dataset.passive[0]
    where = {v: i for i, v in enumerate(passive.ids)}

    expected = passive.features[[where[v] for v in joined.ids]]

    np.testing.assert_array_equal(joined.passive[0], expected)
    assert set(joined.ids) == split.train_ids | split.test_ids


def test_rows_a_passive_party_lacks_are_dropped_and_no_common_rows_is_an_error():
    data = synthetic(n=100, passive_rows=[np.arange(50)])
    split = stfl_split(data, seed=0)
    assert all(int(v[1:]) < 50 for v in join_by_id(split).ids)

    p = data.passive[0]
    stranger = PartyTable(name=p.name, ids=tuple("x" + v for v in p.ids), features=p.features,
                          feature_names=p.feature_names)
    with pytest.raises(InputError, match="no train or test ID"):
        dataset = VerticalDataset(name="d", active=data.active, passive=(stranger,))
        run_centralized(stfl_split(dataset, seed=0), FAST)
