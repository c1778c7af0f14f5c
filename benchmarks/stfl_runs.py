"""One Table I cell per call: run a method on a split and return its result object.

HE-VFL runs fully through the protocol when its training would take at most
``cfg.he_max_steps`` steps; otherwise its accuracy comes from the plaintext split NN
with the identical structure, initialisation and batch order, and its time is
extrapolated from ``cfg.he_timed_steps`` steps through the protocol, the first of
them counted once (``baselines.he_vfl.project_training``); inference likewise from
as many test batches; bytes per message kind (:func:`project_bytes`). The result's ``mode`` says which
("measured" or "split-NN accuracy, time extrapolated").
"""

from __future__ import annotations

import math
from typing import Any

from securefl.data import VerticalSplit

EXTRAPOLATED = "split-NN accuracy, time extrapolated"


def _train_config(cfg: Any, seed: int, latent: str = "sample") -> Any:
    """The STFL settings a cell runs (the plaintext baselines read the supervised part); the latent
    draws are seeded with the cell's seed so that a cell repeats."""
    from securefl.algorithms.stfl import STFLConfig

    return STFLConfig(epochs=cfg.epochs, vae_epochs=cfg.epochs, seed=seed, device=cfg.device,
                      cuda_graphs=cfg.cuda_graphs, latent=latent, latent_seed=seed)


def run_centralized_row(split: VerticalSplit, cfg: Any, seed: int) -> dict[str, Any]:
    from baselines.centralized import run_centralized

    return run_centralized(split, _train_config(cfg, seed))


def run_hierarchical_row(split: VerticalSplit, cfg: Any, seed: int) -> dict[str, Any]:
    from baselines.hierarchical import run_hierarchical

    return run_hierarchical(split, _train_config(cfg, seed))


def run_stfl_row(split: VerticalSplit, cfg: Any, seed: int, latent: str = "sample") -> dict[str, Any]:
    """STFL with passive parties sending one posterior draw (``"sample"``) or the mean per row."""
    from securefl.algorithms.stfl import run_stfl

    return run_stfl(split, _train_config(cfg, seed, latent))


def training_steps(split: VerticalSplit, epochs: int, batch_size: int) -> int:
    """Steps of a full HE-VFL run: epochs x batches of the training rows that PSI finds at both
    parties (a training ID the passive party lacks is not trained on)."""
    common = split.train_ids.intersection(split.dataset.passive[0].ids)
    return epochs * math.ceil(len(common) / batch_size)


def he_vfl_config(split: VerticalSplit, cfg: Any, seed: int, he: str) -> Any:
    """The HEVFLConfig of a cell (the split NN that stands for an extrapolated one reads it too)."""
    from baselines.he_vfl import HEVFLConfig, activation_bound_for

    # passive_seed, share_seed: both shares of the initial weights repeatable, and those of the split NN whose
    # accuracy stands for an extrapolated run (HE-VFL's default draws them from the OS)
    return HEVFLConfig(he=he, epochs=cfg.epochs, seed=seed, passive_seed=seed, share_seed=seed, device=cfg.device,
                       activation_bound=activation_bound_for(split.dataset.name))


def run_he_vfl_row(split: VerticalSplit, cfg: Any, seed: int, he: str) -> dict[str, Any]:
    from baselines.he_vfl import run_he_vfl

    config = he_vfl_config(split, cfg, seed, he)
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
    batches = {"timed_steps": timed["steps"], "steps": steps,
               "timed_batches": timed["steps"] + math.ceil(timed["scored_rows"] / config.batch_size),
               "batches": steps + math.ceil(timed["test_rows"] / config.batch_size)}
    per_party = {party: project_bytes(tags, **batches) for party, tags in timed["bytes_per_tag"].items()}
    return {**timed, "metrics": plain["metrics"], "mode": EXTRAPOLATED,
            "seconds": sum(phases.values()), "phases": phases,
            "bytes": sum(per_party.values()), "bytes_per_party": per_party, "bytes_projection": "per message kind",
            "timed_steps": timed["steps"], "total_steps": steps, "timed_seconds": timed["seconds"]}


def project_bytes(per_tag: dict[str, dict[str, int]], *, timed_steps: int, steps: int, timed_batches: int,
                  batches: int) -> int:
    """Bytes one party would send in the full run, from its per-tag counts in a timed one.

    PSI and the key setup go once; training-only messages (``TRAINING_MESSAGES``) scale
    by ``steps / timed_steps``; every other message goes once per batch, training and
    test alike, and scales by ``batches / timed_batches``.
    """
    from protocols.interactive import SETUP_MESSAGES, TRAINING_MESSAGES

    total = 0.0
    for key, count in per_tag.items():
        stage, _, name = key.partition("/")
        if stage == "psi" or name in SETUP_MESSAGES:
            total += count["bytes"]
        elif name in TRAINING_MESSAGES:
            total += count["bytes"] * steps / timed_steps
        else:
            total += count["bytes"] * batches / timed_batches
    return int(total)
