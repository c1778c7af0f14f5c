"""Model averaging for horizontal FL (CHFL, GL, FedAvg) over the protocol layer's secure aggregation.

A client hands the tensors it federates (CHFL's common column, GL's global layers,
FedAvg's whole model) to :func:`client_average`; the server runs
:func:`server_average` once per round. The server only ever sees the *sum* of the
clients' (weighted) vectors when ``SecAggConfig(secure=True)``: each client's
vector travels masked (Bonawitz et al. 2017). ``secure=False`` sends the same
vectors in clear, so both settings give the same average up to fixed-point error
(``2^-(scale_bits+1)`` per value and client) and can be timed side by side.

The average then goes back to every client in clear (every client is meant to
learn the new global model), so after each round all clients hold identical
federated tensors. Learning code never touches the wire format.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
import torch

from protocols.channels import SecAggConfig, average_client, secagg_server, weighted_mean
from protocols.codec import Tag
from protocols.errors import EncodingOverflowError, InputError, ProtocolError
from protocols.transport.base import Transport, send_to_present

FEDAVG_STAGE = "fedavg"


def average_tag(round: int) -> Tag:
    """The tag of the message that returns round ``round``'s average to a client."""
    return Tag(round, FEDAVG_STAGE, "average")


def flatten(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """The tensors' values, concatenated in order, as one float64 vector."""
    if not tensors:
        raise InputError("no tensors to federate")
    return np.concatenate([t.detach().to("cpu", torch.float64).reshape(-1).numpy() for t in tensors])


def assign(tensors: Sequence[torch.Tensor], vector: np.ndarray) -> None:
    """Copy ``vector`` back into ``tensors`` in place (the inverse of :func:`flatten`)."""
    total = sum(t.numel() for t in tensors)
    if vector.shape != (total,):
        raise ProtocolError(f"the average has {vector.size} values, the federated tensors {total}")
    offset = 0
    with torch.no_grad():
        for t in tensors:
            chunk = torch.from_numpy(np.ascontiguousarray(vector[offset:offset + t.numel()]))
            t.copy_(chunk.reshape(t.shape).to(t.device, t.dtype))
            offset += t.numel()


def client_average(transport: Transport, *, server: str, tensors: Sequence[torch.Tensor], config: SecAggConfig,
                   round: int, weight: float = 1.0) -> None:
    """Contribute ``tensors`` (weighted by ``weight``) to the round's average and load the average into them.

    Waits ``config.client_wait`` (2 x ``stage_timeout``) for the average: the server may
    wait a whole ``stage_timeout`` for a silent client before it unmasks and answers.
    """
    tensors = list(tensors)
    vector = flatten(tensors)
    if not np.isfinite(vector).all():
        raise InputError(f"{transport.name!r}, round {round}: the weights to average hold nan or inf after local "
                         "training (it diverged; a lower learning rate may help)")
    try:
        average_client(transport, server=server, vector=vector, weight=weight, config=config, round=round)
    except EncodingOverflowError:  # its own advice (scale_bits, clipping) is no option of a training run
        raise InputError(f"{transport.name!r}, round {round}: the weights to average reach"
                         f" {float(np.abs(vector).max()):.3g}, too large for secure aggregation's fixed point"
                         " (training has likely diverged; a lower learning rate may help)") from None
    message = transport.recv(server, average_tag(round), timeout=config.client_wait)
    mean = message["x"]
    if not isinstance(mean, np.ndarray) or mean.dtype != np.float32 or mean.ndim != 1:
        raise ProtocolError(f"round {round}: the average from {server!r} is not a 1-D float32 array")
    if not np.isfinite(mean).all():  # loaded, it would train on (and blame this client's training for) nan
        raise ProtocolError(f"round {round}: the average from {server!r} holds nan or inf")
    assign(tensors, mean.astype(np.float64))


def server_average(transport: Transport, *, clients: Sequence[str], config: SecAggConfig,
                   round: int) -> tuple[float, tuple[str, ...]]:
    """Aggregate one round (masked if ``config.secure``) and send the average back to every client
    still there; the seconds taken and the clients that dropped out of the round."""
    start = time.perf_counter()
    result = secagg_server(transport, clients=clients, config=config, round=round)
    with np.errstate(over="ignore"):
        mean = weighted_mean(result).astype(np.float32)
    if not np.isfinite(mean).all():
        raise ProtocolError(f"round {round}: the clients' average is beyond float32's range")
    send_to_present(transport, clients, average_tag(round), x=mean)
    return time.perf_counter() - start, tuple(result.dropped)


def averaging_server(transport: Transport, *, clients: Sequence[str], rounds: int,
                     config: SecAggConfig) -> dict[str, Any]:
    """The server's whole role in a run of ``rounds`` averaging rounds: it holds no model.

    Returns ``{"round_seconds": [...], "dropped": {client: first round it missed}}``: the
    wall time of each round's aggregation, measured from the moment the server starts
    waiting for the clients' inputs, and the clients that dropped out (secure
    aggregation averages over the others). Every round asks every client again: one
    that has left is noticed at once, a silent one after the stage timeout.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"rounds must be a positive int, got {rounds!r}")
    seconds: list[float] = []
    dropped: dict[str, int] = {}
    for r in range(rounds):
        took, gone = server_average(transport, clients=clients, config=config, round=r)
        seconds.append(took)
        for client in gone:
            dropped.setdefault(client, r)
    return {"round_seconds": seconds, "dropped": dropped}


__all__ = ["FEDAVG_STAGE", "assign", "average_tag", "averaging_server", "client_average", "flatten",
           "server_average"]
