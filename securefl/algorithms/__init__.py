"""Federated learning algorithms written as party roles over a Transport.

:mod:`securefl.algorithms.stfl` -- self-taught federated learning (vertical);
:mod:`securefl.algorithms.training` -- the training loop and config shared with the baselines.
"""

from securefl.algorithms.stfl import STFLConfig, run_stfl, stfl_active, stfl_parties, stfl_passive
from securefl.algorithms.training import MethodResult, TrainConfig

__all__ = ["MethodResult", "STFLConfig", "TrainConfig", "run_stfl", "stfl_active", "stfl_parties",
           "stfl_passive"]
