"""CHFL's comparison methods (Mori et al., section V-A2 and V-B5) on a :class:`CHFLPartition`.

- Common: FedAvg over the common features only (through the same secure
  aggregation as CHFL); it is exactly CHFL's common column, so it runs as a CHFL
  run without unique columns.
- Local: each client trains an MLP (512-256-128) on all its own features (common
  and unique) alone; no server, no messages.
- Simple method (V-B5): the common network is trained by FedAvg as in CHFL; in
  parallel each client trains a unique MLP on ``[unique features, softmax of the
  common network's output]`` (detached), which alone makes the prediction.

All three share CHFL's training loop (:mod:`securefl.algorithms.chfl_local`):
same data, scaling, batches, rounds x local epochs and per-client model
selection on the validation rows, so the comparison differs only in the model.
"""

from __future__ import annotations

from typing import Any

from securefl.algorithms.chfl import CHFLConfig, run_chfl_method
from securefl.data.chfl_partition import CHFLPartition


def run_common(partition: CHFLPartition, config: CHFLConfig, *, secure_agg: bool = True,
               backend: str = "inprocess") -> dict[str, Any]:
    """The Common baseline: FedAvg on the common features; the DESIGN result dict."""
    return run_chfl_method("common", partition, config, secure_agg=secure_agg, backend=backend)


def run_local(partition: CHFLPartition, config: CHFLConfig) -> dict[str, Any]:
    """The Local baseline: every client alone on all its features; the DESIGN result dict (bytes = 0)."""
    return run_chfl_method("local", partition, config)


def run_simple(partition: CHFLPartition, config: CHFLConfig, *, secure_agg: bool = True,
               backend: str = "inprocess") -> dict[str, Any]:
    """The paper's simple method (V-B5): unique MLP on [unique features, common-net output]."""
    return run_chfl_method("simple", partition, config, secure_agg=secure_agg, backend=backend)


__all__ = ["run_common", "run_local", "run_simple"]
