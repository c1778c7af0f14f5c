"""STFL and its baselines with the paper's settings on scikit-learn's breast cancer (10 / 20 features)."""

from __future__ import annotations

from baselines.centralized import run_centralized
from baselines.hierarchical import run_hierarchical
from securefl.algorithms import STFLConfig, run_stfl
from securefl.data import stfl_split
from tests.securefl.algorithms.helpers import breast

PAPER = STFLConfig(epochs=100, vae_epochs=100, batch_size=128, lr=1e-3, seed=0)


def test_stfl_with_paper_settings_is_accurate():
    split = stfl_split(breast(), seed=0)

    result = run_stfl(split, PAPER)

    passive = result["parties"]["passive"]
    assert passive["self_taught_rows"] == 228 and passive["latent"] == 10 and passive["hidden"] == 100
    assert result["parties"]["active"]["input_features"] == 20
    assert result["metrics"]["accuracy"] > 0.9 and result["metrics"]["auroc"] > 0.95


def test_baselines_with_paper_settings_are_accurate():
    for split in (stfl_split(breast(), seed=0), stfl_split(breast(), seed=0, all_data=True)):
        for run in (run_centralized, run_hierarchical):
            assert run(split, PAPER)["metrics"]["accuracy"] > 0.9
