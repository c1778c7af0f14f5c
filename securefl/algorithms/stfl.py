"""Self-taught federated learning (STFL; Chu et al., Algorithm 3) as party roles.

The paper calls the label holder the "host" and the feature holders "guests";
here they are the active party and the passive parties.

Passive party (:func:`stfl_passive`):
  1. PSI with the active party; its rows outside the common intersection are its
     self-taught set (Algorithm 3 trains the VAE on rows ``i`` the active party lacks;
     with several passive parties PSI reveals only the common intersection, so rows
     the active party holds but another passive party lacks count as self-taught too).
  2. Standardise with statistics of the self-taught rows only; pretrain a VAE
     (eq. 5, see :mod:`securefl.models.vae`) on them; drop the decoder, freeze the encoder.
  3. Send one posterior draw per intersecting row (``latent="sample"``, the default;
     with ``latent="mean"`` the posterior means ``mu``), in PSI order, to the active
     party over a :class:`~protocols.channels.SecureChannel`.
Active party (:func:`stfl_active`): PSI with every passive party, receive their
latents, train an MLP on ``[own features, latents of every passive party]`` for its
training rows (scaler fitted on those rows), evaluate on its test rows.

What travels: PSI messages, one channel handshake per passive party, and the
encrypted latents passive -> active. Nothing else reaches a passive party: no
labels, gradients or model outputs (the encoders are frozen, so the active party
never needs to send anything back).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np
import torch

from protocols.channels import SecureChannel
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.psi import psi_active, psi_passive
from protocols.transport import Transport, relayed, run_parties
from securefl.algorithms.training import (MethodResult, TrainConfig, as_tensor, binary_labels,
                                          device_generator, fit_vae, intra_op_threads,
                                          train_and_evaluate)
from securefl.data.split import VerticalSplit
from securefl.data.vertical import PartyTable
from securefl.models import VAE, Standardizer, hidden_width, mlp
from securefl.runtime import SeedPlan, resolve_device
from securefl.runtime import validation as check

STAGE = "stfl"
LATENTS = "latents"
CHUNK_BYTES = 1 << 24  # latents per channel message: well under the AEAD's size limit
LATENT_READINGS = ("mean", "sample")
Observer = Callable[[str, Sequence[str], np.ndarray], None]


@dataclass(frozen=True, kw_only=True)
class STFLConfig(TrainConfig):
    """STFL settings: the supervised ones plus VAE pretraining epochs.

    ``timeout`` is how long (seconds) the active party waits for a passive party's
    latents, which arrive only after that party's VAE pretraining. ``latent``: what a
    passive party sends for a row, one draw from the posterior (``"sample"``, the
    default: the paper's "latent vector z", drawn once per row) or the posterior mean
    (``"mean"``). Draws are the default because they are the paper's method and give
    less away: features rebuilt from them by a linear attacker who knows 10% of the rows
    score R² 0.32 / 0.35 / 0.03 on cancer / payment / credit against 0.76 / 0.72 / 0.29
    from means (benchmarks/results/latent_leakage.md). That noise is the model's own,
    not a privacy mechanism with a guarantee. ``latent_seed`` seeds the draws, to
    repeat a run; by default (None) each passive party seeds its generator from the OS,
    as the active party, which may know ``seed``, must not be able to recompute the
    noise.
    """

    vae_epochs: int = 100
    timeout: float = 3600.0
    latent: str = "sample"
    latent_seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check.positive_int("STFLConfig", "vae_epochs", self.vae_epochs)
        check.positive_number("STFLConfig", "timeout", self.timeout)
        if self.latent not in LATENT_READINGS:
            raise InputError(f"STFLConfig.latent must be one of {LATENT_READINGS}, got {self.latent!r}")
        if self.latent_seed is not None:
            check.seed("STFLConfig", self.latent_seed, name="latent_seed")


def _latent_generator(seed: int | None, party: str, device: torch.device) -> torch.Generator:
    """The generator of ``party``'s latent draws: from ``seed`` when one is given (a repeatable
    run), else seeded from the OS, so no other party can recompute the noise."""
    if seed is not None:
        return device_generator(SeedPlan(seed), f"stfl/latents/{party}", device)
    return torch.Generator(device=device).manual_seed(int.from_bytes(os.urandom(8), "little"))


def _latent_tag(chunk: int) -> Tag:
    return Tag(chunk, STAGE, LATENTS)


def stfl_passive(transport: Transport, *, active: str, table: PartyTable,
                 config: STFLConfig) -> dict[str, Any]:
    """Role of a passive party: PSI, VAE pretraining on its self-taught rows, latents out."""
    device = resolve_device(config.device)
    clock = [time.perf_counter()]
    psi = psi_passive(transport, active=active, ids=table.ids)
    if psi.size == 0:
        raise InputError(f"passive party {transport.name!r} has no rows in common with active party"
                         f" {active!r} (the common ID intersection is empty); STFL needs overlapping IDs")
    outside = np.ones(table.n_rows, dtype=bool)
    outside[psi.indices] = False
    self_taught = np.flatnonzero(outside)
    if len(self_taught) == 0:
        raise InputError(f"passive party {transport.name!r}: every row is in the intersection, so there is no"
                         " self-taught set to pretrain its VAE on (STFL needs a split with all_data=False)")
    channel = SecureChannel.establish(transport, active, initiator=True)
    clock.append(time.perf_counter())
    scaler, encoder, history = pretrain_encoder(table.features[self_taught], config, device=device,
                                                purpose=f"stfl/vae/{transport.name}")
    clock.append(time.perf_counter())
    with torch.inference_mode(), intra_op_threads(config.threads):
        common = as_tensor(scaler.transform(table.features[psi.indices]), device)
        if config.latent == "sample":
            # drawn in this party's own row order: PSI's order changes from run to run, and a
            # row's draw should not (the same latent_seed gives the same run)
            own = np.argsort(psi.indices, kind="stable")
            draws = _latent_generator(config.latent_seed, transport.name, device)
            latents = np.empty((psi.size, encoder.mu.out_features), dtype=np.float32)
            latents[own] = encoder(common[torch.as_tensor(own, device=device)], draws).float().cpu().numpy()
        else:
            latents = encoder(common).float().cpu().numpy()
    if not np.isfinite(latents).all():  # checked here too, so the cause is named, not "malformed"
        raise InputError(f"passive party {transport.name!r}: VAE pretraining diverged (its latents hold nan or"
                         f" inf; last loss {history[-1]:.4g}); a lower learning rate may help")
    sent = send_latents(channel, latents)
    clock.append(time.perf_counter())
    return {
        "party": transport.name, "role": "passive", "rows": table.n_rows, "intersection": psi.size,
        "self_taught_rows": int(len(self_taught)), "input_features": table.n_features,
        "hidden": hidden_width(table.n_features, config.hidden_multiplier), "latent": int(latents.shape[1]),
        "latent_reading": config.latent,
        "vae_loss": history, "latent_bytes": sent, "bytes_sent": transport.meter.bytes_sent,
        "phases": {"psi_and_channel": clock[1] - clock[0], "vae_pretraining": clock[2] - clock[1],
                   "encoding_and_sending": clock[3] - clock[2]},
        "seconds": clock[3] - clock[0],
    }


def pretrain_encoder(features: np.ndarray, config: STFLConfig, *, device: torch.device, purpose: str
                     ) -> tuple[Standardizer, torch.nn.Module, list[float]]:
    """Fit a scaler and a VAE on ``features`` (self-taught rows); the frozen encoder, no decoder.

    Returns (scaler, frozen encoder on ``device``: the mean path, or with ``latent="sample"``
    a :class:`~securefl.models.vae.LatentSampler`, per-epoch VAE losses).
    """
    plan = SeedPlan(config.seed)
    scaler = Standardizer.fit(features)
    vae = VAE(features.shape[1], multiplier=config.hidden_multiplier,
              generator=plan.torch(f"{purpose}/init")).to(device)
    history = fit_vae(vae, as_tensor(scaler.transform(features), device), epochs=config.vae_epochs,
                      config=config, generator=device_generator(plan, f"{purpose}/batches", device))
    return scaler, (vae.sampler() if config.latent == "sample" else vae.encoder()), history


def send_latents(channel: SecureChannel, latents: np.ndarray) -> int:
    """Send float32 latents in as few channel messages as fit :data:`CHUNK_BYTES`; bytes sent."""
    rows_per = max(1, CHUNK_BYTES // max(1, latents.shape[1] * latents.itemsize))
    chunks = max(1, -(-len(latents) // rows_per))
    return sum(channel.send(_latent_tag(i), z=np.ascontiguousarray(latents[i * rows_per:(i + 1) * rows_per]),
                            chunks=chunks) for i in range(chunks))


def recv_latents(channel: SecureChannel, *, rows: int, timeout: float) -> np.ndarray:
    """The peer's latents for the ``rows`` common rows, checked (float32, finite, one width)."""
    first = channel.recv(_latent_tag(0), timeout=timeout)
    chunks = first["chunks"]
    if isinstance(chunks, bool) or not isinstance(chunks, int) or not 1 <= chunks <= max(1, rows):
        raise ProtocolError(f"party {channel.peer!r} announced {chunks!r} latent chunks")
    parts = [first["z"]] + [channel.recv(_latent_tag(i), timeout=timeout)["z"] for i in range(1, chunks)]
    width = parts[0].shape[1] if isinstance(parts[0], np.ndarray) and parts[0].ndim == 2 else 0
    for part in parts:
        if not (isinstance(part, np.ndarray) and part.dtype == np.float32 and part.ndim == 2
                and part.shape[1] == width and width > 0 and np.all(np.isfinite(part))):
            raise ProtocolError(f"party {channel.peer!r} sent malformed latents")
    latents = np.concatenate(parts)
    if len(latents) != rows:
        raise ProtocolError(f"party {channel.peer!r} sent latents for {len(latents)} rows, expected {rows}")
    return latents


def stfl_active(transport: Transport, *, passive: Sequence[str], table: PartyTable, train_ids: frozenset[str],
                test_ids: frozenset[str], config: STFLConfig, observe: Observer | None = None) -> dict[str, Any]:
    """Role of the active party: PSI, receive latents, train and evaluate the MLP.

    ``observe(passive_name, ids, latents)``, if given, sees each passive party's latents as
    this party received them, with their row IDs (what a leakage measurement may read)."""
    names = [passive] if isinstance(passive, str) else list(passive)
    if table.labels is None:
        raise InputError(f"active party {transport.name!r} has no labels")
    labels = binary_labels(table.labels, owner=f"active party {transport.name!r}")
    resolve_device(config.device)  # fail before any message if the device is missing
    start = time.perf_counter()
    psi = psi_active(transport, passive=names, ids=table.ids)
    if psi.size == 0:
        raise InputError(f"active party {transport.name!r} has no training or test IDs in common with passive"
                         f" parties {names} (its self-taught rows are left out of the PSI)")
    psi_done = time.perf_counter()
    channels = {n: SecureChannel.establish(transport, n, initiator=False) for n in names}
    latents = [recv_latents(channels[n], rows=psi.size, timeout=config.timeout) for n in names]
    received = time.perf_counter()

    # PSI order is pseudorandom per run; go back to this party's own row order so
    # that the seed alone fixes the batches (and the result) on every backend
    order = np.argsort(psi.indices, kind="stable")
    rows = psi.indices[order]
    train = np.fromiter((psi.ids[i] in train_ids for i in order), dtype=bool, count=psi.size)
    test = np.fromiter((psi.ids[i] in test_ids for i in order), dtype=bool, count=psi.size)
    if not train.any() or not test.any():
        raise InputError(f"active party {transport.name!r}: the intersection holds {int(train.sum())}"
                         f" training and {int(test.sum())} test rows; both must be non-empty")
    if observe is not None:
        ids = [table.ids[r] for r in rows]
        for name, z in zip(names, latents):
            observe(name, ids, z[order])
    x = np.hstack([table.features[rows], *(z[order] for z in latents)])
    model = mlp(x.shape[1], hidden_width(x.shape[1], config.hidden_multiplier),
                generator=SeedPlan(config.seed).torch("stfl/mlp/init"))
    metrics, phases, history = train_and_evaluate(model, x, labels[rows], train, test, config=config,
                                                  purpose="stfl/mlp")
    return {
        "party": transport.name, "role": "active", "rows": table.n_rows, "intersection": psi.size,
        "train_rows": int(train.sum()), "test_rows": int(test.sum()), "input_features": int(x.shape[1]),
        "hidden": model[0].out_features,
        "latent_widths": {n: int(z.shape[1]) for n, z in zip(names, latents)},
        "metrics": metrics, "loss": history, "bytes_sent": transport.meter.bytes_sent,
        "phases": {"psi": psi_done - start, "waiting_for_latents": received - psi_done, **phases},
        "seconds": time.perf_counter() - start,
    }


def stfl_parties(split: VerticalSplit, config: STFLConfig) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The roles and keyword arguments of every party for :func:`run_parties`.

    Passive parties never get the progress callback; the active party gets ``config``'s.
    """
    ds = split.dataset
    quiet = replace(config, progress=None)
    roles: dict[str, Any] = {ds.active.name: stfl_active, **{p.name: stfl_passive for p in ds.passive}}
    kwargs: dict[str, dict[str, Any]] = {
        ds.active.name: {"passive": [p.name for p in ds.passive], "table": ds.active,
                         "train_ids": split.train_ids, "test_ids": split.test_ids, "config": config},
        **{p.name: {"active": ds.active.name, "table": p, "config": quiet} for p in ds.passive},
    }
    return roles, kwargs


def run_stfl(split: VerticalSplit, config: STFLConfig, *, backend: str = "inprocess",
             record: bool = False, observe: Observer | None = None) -> dict[str, Any]:
    """Run STFL on ``split`` with every party in this process (or one process each) and report.

    ``record``: add ``logs``, every message each party's transport delivered (what it saw).
    ``observe``: handed to the active party (:func:`stfl_active`); in-process backend only.
    """
    if not isinstance(config, STFLConfig):
        raise InputError(f"run_stfl needs an STFLConfig, got {type(config).__name__}")
    device = resolve_device(config.device)
    with relayed(config.progress, backend) as progress:
        roles, kwargs = stfl_parties(split, replace(config, progress=progress))
        if observe is not None:
            if backend != "inprocess":
                raise InputError("run_stfl: observe needs backend='inprocess' (it is called in the active party)")
            kwargs[split.dataset.active.name]["observe"] = observe
        run = run_parties(roles, kwargs=kwargs, backend=backend, record=record)
    ds = split.dataset
    active = run.results[ds.active.name]
    passive = [run.results[p.name] for p in ds.passive]
    phases = {"psi": active["phases"]["psi"],
              "vae_pretraining": max(p["phases"]["vae_pretraining"] for p in passive),
              "training": active["phases"]["training"], "inference": active["phases"]["inference"]}
    settings = {**config.settings(), "backend": backend, "all_data": split.all_data, "split_seed": split.seed,
                "vae_decoder": "gaussian, unit variance (0.5 * squared error)",
                "shared_latent": "posterior mean" if config.latent == "mean" else "one posterior draw per row",
                "train_rows": active["train_rows"], "test_rows": active["test_rows"],
                "self_taught_rows": {p["party"]: p["self_taught_rows"] for p in passive}}
    result = MethodResult(
        method="stfl", dataset=ds.name, seed=config.seed, device=str(device), metrics=active["metrics"],
        seconds=run.seconds, bytes=run.bytes, phases=phases,
        bytes_per_party={name: c["bytes_sent"] for name, c in run.comm.items()}, settings=settings,
        extra={"parties": run.results, "intersection_size": active["intersection"], **run.gpu_fields()}).to_dict()
    if record:
        result["logs"] = run.logs  # not through to_dict: its asdict would turn the messages into dicts
    return result


__all__ = ["STFLConfig", "pretrain_encoder", "recv_latents", "run_stfl", "send_latents", "stfl_active",
           "stfl_parties", "stfl_passive"]
