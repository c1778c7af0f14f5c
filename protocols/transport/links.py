"""Authenticated, encrypted links between parties that know each other's identity keys.

Over the network, the torch.distributed links are plain TCP and the rendezvous checks
no identity. When every party has a static X25519 identity key and pins the public
key of every other (``TorchDistTransport(identity=..., trusted=...)``), each pair of
parties runs a handshake right after the rendezvous and every frame between them is
sealed:

* hello, one each way: a fresh ephemeral public key and the static public key. A
  static key other than the pinned one ends the handshake.
* keys: :func:`~protocols.channels.secure_channel.direction_keys` (ee, es and se
  X25519 exchanges into HKDF-SHA256, bound to both names and all four keys), so only
  the holders of the two pinned private keys can derive them.
* confirmation, one each way: a sealed constant, so an impostor is caught at once
  rather than at its first real message.
* frames: ChaCha20-Poly1305 under the direction's key, the nonce from the direction's
  counter, the sender, receiver and counter bound as associated data (a frame over
  1 GiB is sealed in 1 GiB chunks, one counter value each). The links
  deliver frames in order, so a dropped, replayed, reordered, altered or foreign frame
  fails authentication.
* lengths: the length the transport sends before each frame, and its close signal,
  are sealed too (:meth:`Link.seal_length`, the counter value before the frame's), so
  a forged length is caught before the receiver allocates anything for it.

Every failure is the one :class:`~protocols.errors.CryptoError`, naming the peer but
not the check. A man in the middle can still cut a link, but not read, forge, replay or
reorder what travels on it. The tags (16 bytes per frame and per length) are not counted
in the transport's bytes (which count codec frames on every backend alike).
"""

from __future__ import annotations

import struct
from typing import Callable, Mapping

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.channels import crypto
from protocols.channels.secure_channel import direction_keys, read_hello
from protocols.errors import CryptoError, InputError

LINK_LABEL = "securefl/link/v1"
CONFIRM = b"securefl/link/confirm"
MAX_HANDSHAKE_BYTES = 1024
CHUNK_BYTES = 1 << 30
"""Plaintext bytes sealed per AEAD call; ChaCha20-Poly1305 in ``cryptography`` takes under 2 GiB."""
_LENGTH = struct.Struct("<q")
SEALED_LENGTH_BYTES = _LENGTH.size + crypto.TAG_BYTES
"""Bytes of a sealed length on the wire."""


class Link:
    """One party's end of an authenticated link: the two direction keys and frame counters.

    A frame longer than ``chunk`` bytes is sealed as consecutive chunks, each under its own
    counter value (the AEAD takes at most 2 GiB per call); the receiver cuts it the same way.
    """

    __slots__ = ("me", "peer", "_send_key", "_recv_key", "_sent", "_received", "_chunk")

    def __init__(self, me: str, peer: str, *, send_key: bytes, recv_key: bytes, chunk: int = CHUNK_BYTES) -> None:
        self.me, self.peer = me, peer
        self._send_key, self._recv_key = bytes(send_key), bytes(recv_key)
        self._sent = self._received = 0
        self._chunk = chunk

    def __repr__(self) -> str:
        return f"Link({self.me!r} <-> {self.peer!r})"

    def seal(self, frame: bytes) -> bytes:
        """``frame`` encrypted and authenticated as this direction's next frame (callers keep order)."""
        view, parts = memoryview(frame), []
        for start in range(0, max(len(frame), 1), self._chunk):
            piece = frame if len(frame) <= self._chunk else bytes(view[start:start + self._chunk])
            parts.append(crypto.seal(self._send_key, self._sent, _associated(self.me, self.peer, self._sent), piece))
            self._sent += 1
        return b"".join(parts)

    def sealed_size(self, size: int) -> int:
        """Bytes that :meth:`seal` makes of a ``size``-byte frame."""
        return size + crypto.TAG_BYTES * max(1, -(-size // self._chunk))

    def seal_length(self, length: int) -> bytes:
        """A signed 64-bit length (or signal) sealed as this direction's next message."""
        sealed = crypto.seal(self._send_key, self._sent, _associated(self.me, self.peer, self._sent),
                             _LENGTH.pack(length))
        self._sent += 1
        return sealed

    def open_length(self, sealed: bytes) -> int:
        """The peer's next length, authenticated; CryptoError naming the peer otherwise."""
        try:
            if len(sealed) != SEALED_LENGTH_BYTES:
                raise CryptoError("not a sealed length")
            plain = crypto.open_sealed(self._recv_key, self._received,
                                       _associated(self.peer, self.me, self._received), sealed)
        except CryptoError:
            raise CryptoError(f"party {self.me!r}: a frame from {self.peer!r} failed authentication") from None
        self._received += 1
        return int(_LENGTH.unpack(plain)[0])

    def open(self, sealed: bytes) -> bytes:
        """The peer's next frame, authenticated; CryptoError naming the peer otherwise."""
        step, view, parts = self._chunk + crypto.TAG_BYTES, memoryview(sealed), []
        try:
            for start in range(0, max(len(sealed), 1), step):
                parts.append(crypto.open_sealed(self._recv_key, self._received,
                                                _associated(self.peer, self.me, self._received),
                                                sealed if len(sealed) <= step else bytes(view[start:start + step])))
                self._received += 1
        except CryptoError:
            raise CryptoError(f"party {self.me!r}: a frame from {self.peer!r} failed authentication") from None
        return b"".join(parts)


def check_identity(name: str, peers: tuple[str, ...], identity: X25519PrivateKey | None,
                    trusted: Mapping[str, bytes] | None) -> None:
    """InputError unless ``identity`` and ``trusted`` come together and pin every peer."""
    if (identity is None) != (trusted is None):
        raise InputError(f"party {name!r}: identity and trusted keys go together (give both or neither)")
    if identity is None or trusted is None:
        return
    if not isinstance(identity, X25519PrivateKey):
        raise InputError(f"party {name!r}: identity must be an X25519PrivateKey, got {type(identity).__name__}")
    missing = [p for p in peers if p not in trusted]
    if missing:
        raise InputError(f"party {name!r}: no trusted key for {', '.join(map(repr, missing))}")
    for peer in peers:  # checked here, not after the rendezvous, where the peer would only see its link break
        key = trusted[peer]
        if not isinstance(key, (bytes, bytearray, memoryview)) or len(bytes(key)) != crypto.KEY_BYTES:
            got = f"{len(bytes(key))} bytes" if isinstance(key, (bytes, bytearray, memoryview)) else type(key).__name__
            raise InputError(f"party {name!r}: trusted[{peer!r}] must be {peer!r}'s raw X25519 public key"
                             f" ({crypto.KEY_BYTES} bytes), got {got}")


def handshake(me: str, peer: str, *, initiator: bool, identity: X25519PrivateKey, trusted: bytes,
              send: Callable[[bytes], None], recv: Callable[[], bytes]) -> Link:
    """Run the link handshake with ``peer`` over raw ``send``/``recv`` of bytes.

    Exactly one side is the ``initiator``; the sides alternate, so neither waits on the
    other's send. Both always finish the four messages, whatever failed, so a failure
    is reported on both sides at once rather than leaving one waiting.
    """
    if not isinstance(identity, X25519PrivateKey):
        raise InputError(f"identity must be an X25519PrivateKey, got {type(identity).__name__}")
    if not isinstance(trusted, bytes) or len(trusted) != crypto.KEY_BYTES:
        raise InputError(f"the trusted key of {peer!r} must be {crypto.KEY_BYTES} raw bytes")
    ephemeral = crypto.new_private_key()
    theirs = _swap(crypto.public_bytes(ephemeral) + crypto.public_bytes(identity), initiator, send, recv)
    names = (me, peer) if initiator else (peer, me)
    try:
        their_keys = read_hello(theirs[:crypto.KEY_BYTES], theirs[crypto.KEY_BYTES:])
        if their_keys[1] != trusted:
            raise CryptoError(crypto.AUTH_FAILED)
        keys = direction_keys(LINK_LABEL, names, ephemeral, identity, their_keys, initiator=initiator)
        good = True
    except CryptoError:  # still confirm, under keys the peer cannot have, so it fails too
        keys, good = (crypto.new_seed(), crypto.new_seed()), False
    link = Link(me, peer, send_key=keys[0], recv_key=keys[1])
    if initiator:
        send(link.seal(CONFIRM))
        confirmed = _opens_to_confirm(link, recv())
    else:
        confirmed = _opens_to_confirm(link, recv())
        send(link.seal(CONFIRM))
    if not (good and confirmed):
        raise CryptoError(f"party {me!r}: the link to {peer!r} failed authentication (it does not hold the"
                          " identity key trusted for it, or the link was tampered with)")
    return link


def _swap(mine: bytes, initiator: bool, send: Callable[[bytes], None], recv: Callable[[], bytes]) -> bytes:
    if initiator:
        send(mine)
        return recv()
    theirs = recv()
    send(mine)
    return theirs


def _opens_to_confirm(link: Link, sealed: bytes) -> bool:
    try:
        return link.open(sealed) == CONFIRM
    except CryptoError:
        return False


def _associated(src: str, dst: str, seq: int) -> bytes:
    return crypto.transcript("securefl/link/frame", src, dst, seq)


__all__ = ["CHUNK_BYTES", "CONFIRM", "LINK_LABEL", "Link", "MAX_HANDSHAKE_BYTES", "SEALED_LENGTH_BYTES",
           "check_identity", "handshake"]
