"""Transports: tagged, counted message passing between named parties.

``run_parties(roles, backend="inprocess" | "torch")`` runs party-role functions;
``InProcessNetwork`` gives in-process endpoints directly and ``TorchDistTransport``
(in :mod:`protocols.transport.torchdist`, imported lazily because it loads torch)
puts a party in its own process or on its own machine. ``relayed`` carries a progress
callback to parties in other processes.
"""

from protocols.codec import Message, Tag
from protocols.transport.base import DEFAULT_TIMEOUT, CommMeter, Transport, send_to_present
from protocols.transport.inprocess import InProcessNetwork, InProcessTransport
from protocols.transport.relay import Relay, relayed
from protocols.transport.runner import BACKENDS, RunResult, run_parties

__all__ = [
    "BACKENDS",
    "DEFAULT_TIMEOUT",
    "CommMeter",
    "InProcessNetwork",
    "InProcessTransport",
    "Message",
    "Relay",
    "RunResult",
    "Tag",
    "Transport",
    "relayed",
    "run_parties",
    "send_to_present",
]
