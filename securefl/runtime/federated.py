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
from typing import Sequence

import numpy as np
import torch

from protocols.channels import SecAggConfig, average_client, average_server
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.transport.base import Transport

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
    """Contribute ``tensors`` (weighted by ``weight``) to the round's average and load the average into them."""
    tensors = list(tensors)
    vector = flatten(tensors)
    if not np.isfinite(vector).all():
        raise InputError(f"{transport.name!r}, round {round}: the weights to average hold nan or inf after local "
                         "training (it diverged; a lower learning rate may help)")
    average_client(transport, server=server, vector=vector, weight=weight, config=config, round=round)
    message = transport.recv(server, average_tag(round))
    mean = message["x"]
    if not isinstance(mean, np.ndarray) or mean.dtype != np.float32 or mean.ndim != 1:
        raise ProtocolError(f"round {round}: the average from {server!r} is not a 1-D float32 array")
    assign(tensors, mean.astype(np.float64))


def server_average(transport: Transport, *, clients: Sequence[str], config: SecAggConfig, round: int) -> float:
    """Aggregate one round (masked if ``config.secure``), send the average back; return the seconds taken."""
    start = time.perf_counter()
    mean = average_server(transport, clients=clients, config=config, round=round)
    payload = mean.astype(np.float32)
    for client in clients:
        transport.send(client, average_tag(round), x=payload)
    return time.perf_counter() - start


def averaging_server(transport: Transport, *, clients: Sequence[str], rounds: int,
                     config: SecAggConfig) -> dict[str, list[float]]:
    """The server's whole role in a run of ``rounds`` averaging rounds: it holds no model.

    Returns ``{"round_seconds": [...]}``: the wall time of each round's aggregation,
    measured from the moment the server starts waiting for the clients' inputs.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"rounds must be a positive int, got {rounds!r}")
    seconds = [server_average(transport, clients=clients, config=config, round=r) for r in range(rounds)]
    return {"round_seconds": seconds}


__all__ = ["FEDAVG_STAGE", "assign", "average_tag", "averaging_server", "client_average", "flatten",
           "server_average"]
