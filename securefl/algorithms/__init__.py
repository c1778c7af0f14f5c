"""Federated learning algorithms written as party roles over a Transport.

:mod:`securefl.algorithms.stfl` -- self-taught federated learning (vertical);
:mod:`securefl.algorithms.chfl` -- continual horizontal FL over secure aggregation
(:mod:`~securefl.algorithms.chfl_local`: a client's models; :mod:`~securefl.algorithms.chfl_tuning`:
each client's learning-rate choice);
:mod:`securefl.algorithms.gl` -- Global Layers (only the global MLP layers are federated);
:mod:`securefl.algorithms.training` -- the training loop and config shared with the baselines.
"""

from securefl.algorithms.stfl import STFLConfig, run_stfl, stfl_active, stfl_parties, stfl_passive
from securefl.algorithms.training import MethodResult, TrainConfig

__all__ = ["MethodResult", "STFLConfig", "TrainConfig", "run_stfl", "stfl_active", "stfl_parties",
           "stfl_passive"]
