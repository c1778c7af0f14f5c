"""Group key: one member deals a fresh secret key to the others through relays that must not learn it.

TDCD's clients in different silos reach each other only through their hubs. To compare
something the hubs must not read (each silo's labels, by keyed hash), the clients need a
key no hub holds. Each member makes a fresh X25519 key from the OS and publishes its
public half; the dealer draws the group key from the OS and seals it to every other
member with ChaCha20-Poly1305 under HKDF-SHA256(DH(dealer, member)), whose ``info`` (and
the AEAD's associated data) names the context, both members and both public keys. The
relays carry public keys and sealed keys only. Every wrapping key is used once (each
member's X25519 key is fresh), so the AEAD nonce is fixed.

Threat model: relays that follow the protocol (semi-honest), as for every TDCD hub. A
relay that swaps a public key in transit could read the group key: nothing here binds a
member's key to its name.

Records: :func:`pack` / :func:`unpack` carry a name -> fixed-size bytes map as a JSON list
of names and one byte string, since a message field holds bytes or JSON, not both.
"""

from __future__ import annotations

from typing import Any, Mapping

from protocols.channels import crypto
from protocols.errors import ProtocolError

PUBLIC_BYTES = crypto.KEY_BYTES
SEALED_BYTES = crypto.SEED_BYTES + crypto.TAG_BYTES
_LABEL = "securefl group key"


class GroupKeyMember:
    """One member of a group: its fresh key pair, and the dealing or receiving of the group key."""

    def __init__(self, name: str, *, context: str) -> None:
        self.name, self._context = name, context
        self._private = crypto.new_private_key()
        self.public = crypto.public_bytes(self._private)
        self._dealt = False

    def deal(self, publics: Mapping[str, bytes]) -> tuple[bytes, dict[str, bytes]]:
        """As the dealer: a fresh group key, and for each other member of ``publics`` the key sealed to it.

        Once per member: the wrapping keys depend only on the key pairs and the nonce is
        fixed, so a second deal would seal another key under the same key and nonce.
        """
        if self._dealt:
            raise ProtocolError(f"member {self.name!r} has dealt its group key; a new key needs a new member")
        self._dealt = True
        key = crypto.new_seed()
        sealed = {member: crypto.seal(*self._wrapping(self.name, self.public, member, public, public), key)
                  for member, public in publics.items() if member != self.name}
        return key, sealed

    def receive(self, dealer: str, dealer_public: bytes, sealed: bytes) -> bytes:
        """The group key ``dealer`` sealed to this member; :class:`CryptoError` if it does not open."""
        return crypto.open_sealed(*self._wrapping(dealer, dealer_public, self.name, self.public, dealer_public),
                                  sealed)

    def _wrapping(self, dealer: str, dealer_public: bytes, member: str, member_public: bytes,
                  peer_public: bytes) -> tuple[bytes, int, bytes]:
        """(key, sequence number, associated data) of the seal from ``dealer`` to ``member``."""
        context = crypto.transcript(_LABEL, self._context, dealer, member, dealer_public, member_public)
        return crypto.hkdf_sha256(crypto.agree(self._private, peer_public), info=context), 0, context


def pack(records: Mapping[str, bytes], size: int) -> dict[str, Any]:
    """Message fields ``names`` and ``blob`` for a map of names to ``size``-byte records."""
    if any(len(r) != size for r in records.values()):
        raise ValueError(f"every record must be {size} bytes")
    return {"names": list(records), "blob": b"".join(bytes(r) for r in records.values())}


def unpack(message: Mapping[str, Any], size: int, *, sender: str) -> dict[str, bytes]:
    """The map :func:`pack` made; ProtocolError naming ``sender`` if the fields are malformed."""
    names, blob = message.get("names"), message.get("blob")
    if (not isinstance(names, list) or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names)
            or not isinstance(blob, bytes) or len(blob) != size * len(names)):
        raise ProtocolError(f"the key records from {sender!r} are malformed")
    return {name: blob[i * size:(i + 1) * size] for i, name in enumerate(names)}


__all__ = ["GroupKeyMember", "PUBLIC_BYTES", "SEALED_BYTES", "pack", "unpack"]
