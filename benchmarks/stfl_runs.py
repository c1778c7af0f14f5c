"""One Table I cell per call: run a method on a split and return its result object.

HE-VFL runs fully through the protocol when its training would take at most
``cfg.he_max_steps`` steps; otherwise its accuracy comes from the plaintext split NN
with the identical structure, initialisation and batch order, and its time is
extrapolated from ``cfg.he_timed_steps`` steps through the protocol, the first of
them counted once (``baselines.he_vfl.project_training``); inference likewise from
as many test batches. The result's ``mode`` says which
("measured" or "split-NN accuracy, time extrapolated").
"""

from __future__ import annotations

import math
from typing import Any

from securefl.data import VerticalSplit

EXTRAPOLATED = "split-NN accuracy, time extrapolated"
# Public bound on the passive party's activations |a| that HE-VFL encrypts. give_credit's
# standardised features are heavy-tailed (|x| up to 228), so its first-layer
# activations pass the default 64; a larger public bound costs only CKKS precision.
ACTIVATION_BOUND = {"give_credit": 512.0}  # the most packed CKKS allows


def _train_config(cfg: Any, seed: int) -> Any:
    from securefl.algorithms.stfl import STFLConfig

    return STFLConfig(epochs=cfg.epochs, vae_epochs=cfg.epochs, seed=seed, device=cfg.device)


def run_centralized_row(split: VerticalSplit, cfg: Any, seed: int) -> dict[str, Any]:
    from baselines.centralized import run_centralized

    return run_centralized(split, _train_config(cfg, seed))


def run_hierarchical_row(split: VerticalSplit, cfg: Any, seed: int) -> dict[str, Any]:
    from baselines.hierarchical import run_hierarchical

    return run_hierarchical(split, _train_config(cfg, seed))


def run_stfl_row(split: VerticalSplit, cfg: Any, seed: int) -> dict[str, Any]:
    from securefl.algorithms.stfl import run_stfl

    return run_stfl(split, _train_config(cfg, seed))


def training_steps(split: VerticalSplit, epochs: int, batch_size: int) -> int:
    """Steps of a full run: epochs x batches of the training rows."""
    return epochs * math.ceil(len(split.train_ids) / batch_size)


def run_he_vfl_row(split: VerticalSplit, cfg: Any, seed: int, he: str) -> dict[str, Any]:
    from baselines.he_vfl import HEVFLConfig, run_he_vfl

    extra = {"activation_bound": ACTIVATION_BOUND[split.dataset.name]} if split.dataset.name in ACTIVATION_BOUND else {}
    config = HEVFLConfig(he=he, epochs=cfg.epochs, seed=seed, device=cfg.device, **extra)
    steps = training_steps(split, cfg.epochs, config.batch_size)
    if steps <= (cfg.ckks_max_steps if he == "ckks" else cfg.paillier_max_steps):
        return {**run_he_vfl(split, config), "mode": "measured"}
    return _extrapolated_he_vfl(split, config, steps, cfg.he_timed_steps)


def _extrapolated_he_vfl(split: VerticalSplit, config: Any, steps: int, timed_steps: int) -> dict[str, Any]:
    """Split-NN accuracy plus protocol time measured on ``timed_steps`` steps, scaled to ``steps``."""
    from dataclasses import replace

    from baselines.he_vfl import project_training, run_he_vfl
    from baselines.splitnn import train_splitnn

    plain = train_splitnn(split, config)
    timed = run_he_vfl(split, replace(config, max_steps=timed_steps, max_eval_batches=timed_steps))
    training = project_training(timed["phases"]["training"], timed["first_step_s"], timed["steps"], steps)
    phases = {**timed["phases"], "training": training, "inference": timed["projected_inference_s"]}
    scale = steps / timed_steps  # setup and PSI bytes are scaled too: an upper bound, said in the report
    return {**timed, "metrics": plain["metrics"], "mode": EXTRAPOLATED,
            "seconds": sum(phases.values()), "phases": phases,
            "bytes": int(timed["bytes"] * scale),
            "bytes_per_party": {k: int(v * scale) for k, v in timed.get("bytes_per_party", {}).items()},
            "timed_steps": timed_steps, "total_steps": steps, "timed_seconds": timed["seconds"]}
