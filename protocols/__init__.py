"""The protocol layer: PSI, homomorphic encryption, secure channels and aggregation,
transports and the safe codec. It knows nothing of learning."""

from protocols.errors import (
    CryptoError,
    DecodeError,
    DepthExceededError,
    DropoutError,
    DuplicateIDError,
    EncodingOverflowError,
    InputError,
    PeerFailedError,
    PeerTimeoutError,
    ProtocolError,
    SecureFLError,
    TagMismatchError,
)

__all__ = [
    "CryptoError",
    "DecodeError",
    "DepthExceededError",
    "DropoutError",
    "DuplicateIDError",
    "EncodingOverflowError",
    "InputError",
    "PeerFailedError",
    "PeerTimeoutError",
    "ProtocolError",
    "SecureFLError",
    "TagMismatchError",
]
