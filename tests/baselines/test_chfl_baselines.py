"""CHFL's baselines: Common equals CHFL's common column, Local sends nothing, simple trains."""

import numpy as np
import pytest

from baselines.chfl_baselines import run_common, run_local, run_simple
from securefl.algorithms.chfl import CHFLConfig, run_chfl
from securefl.data.chfl_sets import TabularDataset, chfl_partition


@pytest.fixture(scope="module")
def partition():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 6))
    y = (x[:, 0] - x[:, 4] > 0).astype(int)
    ds = TabularDataset("toy", x, y, tuple(f"f{i}" for i in range(6)), ("0", "1"))
    return chfl_partition(ds, n_clients=2, common_ratio=0.34, feature_seed=0, sample_seed=0)


def _config():
    return CHFLConfig(rounds=2, local_epochs=1, batch_size=16, hidden=(8, 4))


def test_common_baseline_is_chfls_common_column(partition):
    # Act
    common = run_common(partition, _config(), secure_agg=False)
    joint = run_chfl(partition, _config(), secure_agg=False)
    # Assert: the unique columns never change the common column, so both score the same
    assert common["method"] == "common"
    assert common["metrics"]["clients"] == joint["methods"]["common"]["clients"]


def test_local_baseline_sends_nothing_and_scores_every_client(partition):
    result = run_local(partition, _config())
    assert result["bytes"] == 0 and set(result["metrics"]["clients"]) == {"c0", "c1"}
    assert all(0.0 <= a <= 1.0 for a in result["metrics"]["clients"].values())


def test_simple_method_runs_over_secure_aggregation(partition):
    result = run_simple(partition, _config(), secure_agg=True)
    assert result["method"] == "simple" and result["bytes"] > 0
    assert 0.0 <= result["metrics"]["accuracy"] <= 1.0
