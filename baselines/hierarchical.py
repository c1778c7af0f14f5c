"""Hierarchical baseline: STFL's network trained end to end in plaintext.

The STFL paper's "Hierarchical" row: every passive party gets an encoder of the
same widths as STFL's VAE encoder (n -> 5 n -> max(1, n // 2)), the active party's
MLP takes ``[active features, every encoding]``, and the whole network is trained
jointly on the joined training rows, the encoders updated by backpropagation
(no VAE pretraining, no self-taught rows unless the split has ``all_data=True``).
No protocol runs: the data are joined by ID in one place.
"""

from __future__ import annotations

import time
from typing import Any

from baselines.centralized import join_by_id, plaintext_result
from securefl.algorithms.training import TrainConfig, train_and_evaluate
from securefl.data.split import VerticalSplit
from securefl.models import HierarchicalMLP, latent_width
from securefl.runtime import SeedPlan


def run_hierarchical(split: VerticalSplit, config: TrainConfig) -> dict[str, Any]:
    """Train and test the hierarchical network on ``split``; the common result object."""
    start = time.perf_counter()
    joined = join_by_id(split)
    passive_widths = [x.shape[1] for x in joined.passive]
    model = HierarchicalMLP(joined.active.shape[1], passive_widths, multiplier=config.hidden_multiplier,
                            generator=SeedPlan(config.seed).torch("hierarchical/init"))
    metrics, phases, history = train_and_evaluate(model, joined.features, joined.labels, joined.train,
                                                  joined.test, config=config, purpose="hierarchical")
    names = [p.name for p in split.dataset.passive]
    settings = {"active_features": int(joined.active.shape[1]),
                "passive_features": dict(zip(names, passive_widths)),
                "latent_widths": {name: latent_width(n) for name, n in zip(names, passive_widths)},
                "hidden": model.head[0].out_features}
    return plaintext_result("hierarchical", split, config, joined, metrics=metrics, phases=phases,
                            seconds=time.perf_counter() - start, history=history, settings=settings)


__all__ = ["run_hierarchical"]
