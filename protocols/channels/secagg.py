"""Secure aggregation and the averaging it wraps, as party roles over a Transport.

One code path for both settings: ``SecAggConfig(secure=True)`` runs the Bonawitz et
al. (2017) masked protocol (:mod:`.bonawitz_client`, :mod:`.bonawitz_server`);
``secure=False`` sends the float vectors in clear and sums them. The roles, their
arguments, the dropout rule (at least t clients must remain) and the result type
are the same, so the results agree up to fixed-point error.

Sums: :func:`secagg_client` / :func:`secagg_server`. Weighted means:
:func:`average_client` / :func:`average_server`, which append the weight to the
vector (``[w * x, w]``) so that the individual weights are hidden too and the server
divides the summed vector by the summed weight. A FedAvg round calls these once
with each client's flattened parameter vector::

    run_parties({"server": average_server, "c0": average_client, ...},
                kwargs={"server": {"clients": [...], "config": cfg, "round": r},
                        "c0": {"server": "server", "vector": flat, "weight": n_samples,
                               "config": cfg, "round": r}, ...})
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from protocols.channels import fixedpoint
from protocols.channels.bonawitz import (array_field, collect, one_length, require_survivors, summed,
                                         well_formed)
from protocols.channels.config import DROP_STAGES, DropStage, SecAggConfig, SecAggResult, secagg_tag
from protocols.channels.bonawitz_client import secure_client
from protocols.channels.bonawitz_server import secure_server
from protocols.codec import Message
from protocols.errors import InputError, ProtocolError
from protocols.transport.base import Transport

WEIGHT_BITS = 12
"""A weight must be at least 2^WEIGHT_BITS fixed-point units (see :func:`weighted_payload`)."""


def secagg_client(transport: Transport, *, server: str, vector: np.ndarray, config: SecAggConfig,
                  round: int = 0, drop_after: DropStage | None = None) -> bool | None:
    """Contribute ``vector`` (1-D, finite floats) to the sum the server computes.

    Returns True when this client did its part, False when the server left it out
    of the round, None when ``drop_after`` (one of "advertise", "share_keys",
    "masked_input"; for tests) made it stop sending after that stage.
    """
    _check_config(config)
    values = _check_vector(vector)
    if drop_after is not None and drop_after not in DROP_STAGES:
        raise InputError(f"drop_after must be None or one of {list(DROP_STAGES)}, got {drop_after!r}")
    if config.secure:
        return secure_client(transport, server=server, vector=values, config=config, round=round,
                             drop_after=drop_after)
    if drop_after in ("advertise", "share_keys"):
        return None
    transport.send(server, secagg_tag(round, "plain"), x=values)
    return None if drop_after == "masked_input" else True


def secagg_server(transport: Transport, *, clients: Sequence[str], config: SecAggConfig,
                  round: int = 0) -> SecAggResult:
    """The sum of the surviving clients' vectors (and who survived); masked if ``config.secure``."""
    _check_config(config)
    clients = _check_clients(transport, clients)
    if config.secure:
        return secure_server(transport, clients=clients, config=config, round=round)
    t = config.threshold_for(len(clients))
    got, wait = collect(transport, clients, secagg_tag(round, "plain"), config.stage_timeout)
    inputs = one_length(well_formed(got, clients, _plain_input))  # as the masked server: a malformed one drops
    survivors = [c for c in clients if c in inputs]
    require_survivors(len(survivors), len(clients), t, "sent a well-formed input", round)
    return SecAggResult(vector=summed(inputs, survivors), survivors=tuple(survivors),
                        dropped=tuple(c for c in clients if c not in inputs), threshold=t,
                        secure=False, wait_seconds=wait)


def _plain_input(message: Message) -> np.ndarray:
    """A client's clear input: a 1-D float64 array of finite values (ProtocolError otherwise)."""
    x = array_field(message, "x", np.float64, (-1,))
    if not np.all(np.isfinite(x)):
        raise ProtocolError(f"client {message.src!r} sent a non-finite input")
    return x


def min_weight(scale_bits: int) -> float:
    """The smallest weight :func:`weighted_payload` takes: ``min(1, 2^(WEIGHT_BITS - scale_bits))``."""
    return min(1.0, 2.0**WEIGHT_BITS * fixedpoint.resolution(scale_bits))  # resolution checks scale_bits


def weighted_payload(vector: np.ndarray, weight: float, *, scale_bits: int = 24) -> np.ndarray:
    """``[weight * vector, weight]``: what a client sums for a weighted mean.

    The payload is summed in fixed point at absolute resolution ``2^-scale_bits``, so
    the mean is off by up to ``2^-(scale_bits+1) * (1 + |mean|) / weight`` (equal
    weights). A weight below :func:`min_weight` -- ``2^(12 - scale_bits)``, 2^-12 at
    the default 24 bits, where that error reaches ``2^-13 * (1 + |mean|)`` -- is an
    InputError, masked or not, so plain and masked runs accept the same inputs. The
    floor is capped at 1: integer weights such as sample counts are exact at any
    scale. Only the weights' ratios matter, so scale tiny weights up.
    """
    if isinstance(weight, bool) or not isinstance(weight, (int, float, np.floating, np.integer)) \
            or not (math.isfinite(weight) and weight > 0):
        raise InputError(f"weight must be a positive finite number, got {weight!r}")
    if weight < min_weight(scale_bits):
        raise InputError(f"weight must be at least {min_weight(scale_bits):.3g} (2^({WEIGHT_BITS} - scale_bits),"
                         f" scale_bits={scale_bits}) for fixed point to hold it, got {weight!r};"
                         " only the weights' ratios matter, so scale them all up")
    values = _check_vector(vector)
    return np.concatenate([values * float(weight), [float(weight)]])


def weighted_mean(result: SecAggResult) -> np.ndarray:
    """The weighted mean from the sum of :func:`weighted_payload` vectors."""
    if result.vector.ndim != 1 or result.vector.shape[0] < 1 or not float(result.vector[-1]) > 0:
        raise InputError("the summed weight is not positive; was the payload made by weighted_payload?")
    return result.vector[:-1] / float(result.vector[-1])


def average_client(transport: Transport, *, server: str, vector: np.ndarray, weight: float = 1.0,
                   config: SecAggConfig, round: int = 0, drop_after: DropStage | None = None) -> bool | None:
    """Contribute ``vector`` with ``weight`` (e.g. the number of samples; at least
    :func:`min_weight` of ``config.scale_bits``) to a weighted mean."""
    _check_config(config)
    payload = weighted_payload(vector, weight, scale_bits=config.scale_bits)
    return secagg_client(transport, server=server, vector=payload, config=config, round=round,
                         drop_after=drop_after)


def average_server(transport: Transport, *, clients: Sequence[str], config: SecAggConfig,
                   round: int = 0) -> np.ndarray:
    """The weighted mean of the surviving clients' vectors (only the sum is ever unmasked)."""
    return weighted_mean(secagg_server(transport, clients=clients, config=config, round=round))


def _check_config(config: SecAggConfig) -> None:
    if not isinstance(config, SecAggConfig):
        raise InputError(f"config must be a SecAggConfig, got {type(config).__name__}")


def _check_vector(vector: np.ndarray) -> np.ndarray:
    values = np.asarray(vector)
    if values.ndim != 1 or not (np.issubdtype(values.dtype, np.floating)
                                or np.issubdtype(values.dtype, np.integer)):
        raise InputError(f"vector must be a 1-D array of numbers (flatten parameters first),"
                         f" got {values.dtype} of shape {values.shape}")
    values = values.astype(np.float64, copy=False)
    if not np.isfinite(values).all():
        raise InputError("vector holds nan or inf, which cannot be aggregated")
    return values


def _check_clients(transport: Transport, clients: Sequence[str]) -> tuple[str, ...]:
    names = tuple(clients)
    if len(set(names)) != len(names) or not names:
        raise InputError(f"clients must be distinct party names, got {list(names)}")
    unknown = [c for c in names if c == transport.name or c not in transport.peers]
    if unknown:
        raise InputError(f"clients {unknown} are not peers of the server {transport.name!r}")
    return names
