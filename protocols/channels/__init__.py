"""Secure channels and secure aggregation over a :class:`~protocols.transport.Transport`.

* :class:`SecureChannel`: X25519 + HKDF-SHA256 + ChaCha20-Poly1305 between two parties.
* :func:`secagg_client` / :func:`secagg_server`: Bonawitz et al. (2017) secure
  aggregation of float vectors (fixed point in Z_2^64, PRG masks, Shamir recovery
  of dropouts); :func:`average_client` / :func:`average_server` wrap weighted
  averaging, with masking switched by ``SecAggConfig.secure``.
* :class:`PeerSum`: a fixed group of peers (no server) each learn the sum of the
  group's vectors, every vector pairwise-masked (TDCD's hubs).
* :class:`AdditiveMask`: additive masking of an encrypted array before it goes to the
  key owner for decryption, so the key owner sees only masked values.
* Building blocks with their own tests: :mod:`.shamir`, :mod:`.fixedpoint`,
  :mod:`.prg`, :mod:`.crypto`.
"""

from protocols.channels.config import DROP_STAGES, DropStage, SecAggConfig, SecAggResult
from protocols.channels.secagg import (average_client, average_server, secagg_client, secagg_server,
                                       weighted_mean, weighted_payload)
from protocols.channels.secure_channel import SecureChannel

from protocols.channels.masking import AdditiveMask
from protocols.channels.peersum import PeerSum

__all__ = [
    "AdditiveMask",
    "DROP_STAGES",
    "DropStage",
    "PeerSum",
    "SecAggConfig",
    "SecAggResult",
    "SecureChannel",
    "average_client",
    "average_server",
    "secagg_client",
    "secagg_server",
    "weighted_mean",
    "weighted_payload",
]
