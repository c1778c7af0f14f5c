"""Transports: tagged, counted message passing between named parties.

``run_parties(roles, backend="inprocess" | "torch")`` runs party-role functions;
``InProcessNetwork`` and ``TorchDistTransport`` give a party its endpoint directly.
"""

from protocols.codec import Message, Tag
from protocols.transport.base import DEFAULT_TIMEOUT, CommMeter, Transport
from protocols.transport.inprocess import InProcessNetwork, InProcessTransport
from protocols.transport.runner import BACKENDS, RunResult, run_parties

__all__ = [
    "BACKENDS",
    "DEFAULT_TIMEOUT",
    "CommMeter",
    "InProcessNetwork",
    "InProcessTransport",
    "Message",
    "RunResult",
    "Tag",
    "Transport",
    "run_parties",
]
