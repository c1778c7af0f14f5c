"""Shared helpers for the channel and secure-aggregation tests."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import numpy as np

from protocols.channels import (SecAggConfig, average_client, average_server, secagg_client,
                                secagg_server)
from protocols.codec import Message
from protocols.transport import RunResult, run_parties


def client_inputs(n: int, length: int, *, seed: int = 0, scale: float = 1.0) -> dict[str, np.ndarray]:
    """``n`` clients ``c0..`` with normal vectors (test data, not crypto randomness)."""
    rng = np.random.default_rng(seed)
    return {f"c{i}": rng.normal(scale=scale, size=length) for i in range(n)}


def run_round(inputs: Mapping[str, np.ndarray], config: SecAggConfig, *,
              drops: Mapping[str, str] | None = None, weights: Mapping[str, float] | None = None,
              record: bool = False, round: int = 0) -> RunResult:
    """One aggregation round: sums, or weighted means when ``weights`` is given."""
    drops = drops or {}
    average = weights is not None
    roles: dict[str, Any] = {"server": average_server if average else secagg_server}
    kwargs: dict[str, dict[str, Any]] = {
        "server": {"clients": list(inputs), "config": config, "round": round}}
    for name, vector in inputs.items():
        roles[name] = average_client if average else secagg_client
        kwargs[name] = {"server": "server", "vector": vector, "config": config, "round": round,
                        "drop_after": drops.get(name)}
        if average:
            kwargs[name]["weight"] = weights[name]
    return run_parties(roles, kwargs=kwargs, record=record, timeout=30)


def message_blobs(message: Message) -> Iterable[bytes]:
    """Every field of a delivered message as bytes (arrays raw, JSON as text)."""
    for value in message.fields.values():
        if isinstance(value, np.ndarray):
            yield value.tobytes()
        elif isinstance(value, bytes):
            yield value
        else:
            yield json.dumps(value).encode()


def leaked(logs: Mapping[str, list[Message]], secrets: Iterable[bytes]) -> list[str]:
    """Where any secret (raw or hex) appears in any delivered message of any party."""
    found = []
    secrets = [s for s in secrets if len(s) >= 16]
    for party, log in logs.items():
        for message in log:
            for blob in message_blobs(message):
                for secret in secrets:
                    if secret in blob or secret.hex().encode() in blob:
                        found.append(f"{party} <- {message.src} {message.tag}")
    return found
