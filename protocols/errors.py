"""The typed exception tree shared by every layer.

Callers catch one base class per concern: :class:`InputError` for bad user input
(files, columns, parameters), :class:`ProtocolError` for anything a peer sent or
failed to send, :class:`CryptoError` for every decryption or authentication failure.
"""

from __future__ import annotations


class SecureFLError(Exception):
    """Base of every error raised on purpose by securefl, protocols and baselines."""


class InputError(SecureFLError, ValueError):
    """Bad input from a user: a file, column, parameter or shape that cannot be used."""


class DuplicateIDError(InputError):
    """A party's ID column holds the same ID more than once."""


class EncodingOverflowError(InputError):
    """A value does not fit the fixed-point encoding it was given."""


class DepthExceededError(InputError):
    """A CKKS array has no modulus level left for another plaintext multiplication."""


class ProtocolError(SecureFLError):
    """A peer sent something malformed, unexpected, or nothing at all."""


class DecodeError(ProtocolError):
    """A frame from a peer could not be decoded by the safe codec."""


class TagMismatchError(ProtocolError):
    """A message carried another sender, receiver or tag than the one awaited."""


class PeerTimeoutError(ProtocolError, TimeoutError):
    """A peer did not deliver the awaited message within the timeout."""

    def __init__(self, peer: str, tag: object, timeout: float) -> None:
        super().__init__(f"no message from party {peer!r} with tag {tag} within {timeout:g} s")
        self.peer = peer
        self.tag = tag
        self.timeout = timeout

    def __reduce__(self) -> tuple:
        return (type(self), (self.peer, self.tag, self.timeout))


class PeerFailedError(ProtocolError):
    """Another party of the same run failed, so the awaited message will never come."""


class DropoutError(ProtocolError):
    """Too few parties survived a round for the protocol to finish."""


class CryptoError(SecureFLError):
    """Every decryption or authentication failure collapses into this one type.

    The message never says which check failed, so it cannot serve as an oracle.
    """
