"""An authenticated, encrypted channel between two parties over any :class:`Transport`.

Handshake (one message each way, tag ``Tag(round, stage, "hello")``): each side sends
a fresh ephemeral X25519 public key and, if it has one, its static identity public
key. Both compute

    ikm  = DH(e_i, e_r) [|| DH(e_i, s_r) if the responder has an identity]
                        [|| DH(s_i, e_r) if the initiator has an identity]
    keys = HKDF-SHA256(ikm, info = transcript(names of initiator and responder, round,
                                              stage, both ephemeral and both static keys))

and split the 64 output bytes into one key per direction. Each message is the
codec frame of ``(src, dst, tag, fields)`` sealed with ChaCha20-Poly1305; the nonce
is the direction's sequence number and the associated data binds src, dst, tag and
seq. Only the ciphertext travels (field ``ct``), under the same tag. A tampered,
replayed, reordered or mis-addressed message, or one under another key, raises
:class:`~protocols.errors.CryptoError` with one fixed message, and the channel
refuses all further use.

Security: without pinned identities the handshake resists passive eavesdroppers only
(an active man in the middle can swap the ephemeral keys) -- which is the
semi-honest model of this project. A party that pins its peer's identity
(``peer_identity=`` raw public key) is protected against an impostor: the keys then
depend on DH with the pinned key, so an impostor can neither read nor forge a
message (implicit authentication: the first forged message fails with CryptoError).
Messages must be received in the order they were sent. A channel object is meant
for one thread.
"""

from __future__ import annotations

from typing import Any, Mapping

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.channels import crypto
from protocols.codec import Message, Tag, check_tag, decode, encode
from protocols.errors import (CryptoError, DecodeError, InputError, ProtocolError,
                              TagMismatchError)
from protocols.transport.base import Transport

CHANNEL_STAGE = "channel"
_LABEL = "securefl/channel/v1"


class SecureChannel:
    """One party's end of an encrypted, authenticated channel to ``peer``."""

    __slots__ = ("_transport", "_peer", "_send_key", "_recv_key", "_send_seq", "_recv_seq",
                 "_broken")

    def __init__(self, transport: Transport, peer: str, *, send_key: bytes, recv_key: bytes) -> None:
        """Use :meth:`establish`; this constructor takes already-derived direction keys."""
        if len(send_key) != crypto.KEY_BYTES or len(recv_key) != crypto.KEY_BYTES:
            raise InputError(f"channel keys must be {crypto.KEY_BYTES} bytes")
        self._transport = transport
        self._peer = peer
        self._send_key = bytes(send_key)
        self._recv_key = bytes(recv_key)
        self._send_seq = 0
        self._recv_seq = 0
        self._broken = False

    def __repr__(self) -> str:
        return f"SecureChannel({self._transport.name!r} <-> {self._peer!r})"

    @property
    def name(self) -> str:
        return self._transport.name

    @property
    def peer(self) -> str:
        return self._peer

    @classmethod
    def establish(cls, transport: Transport, peer: str, *, initiator: bool, round: int = 0,
                  stage: str = CHANNEL_STAGE, identity: X25519PrivateKey | None = None,
                  peer_identity: bytes | None = None,
                  timeout: float | None = None) -> "SecureChannel":
        """Run the handshake with ``peer`` (exactly one side has ``initiator=True``).

        ``identity`` is this party's static key; ``peer_identity`` pins the peer's raw
        public key (the handshake fails with CryptoError if the peer does not hold it).
        """
        if peer == transport.name or peer not in transport.peers:
            raise InputError(f"party {transport.name!r} has no peer named {peer!r}")
        if peer_identity is not None and (not isinstance(peer_identity, (bytes, bytearray))
                                          or len(peer_identity) != crypto.KEY_BYTES):
            raise InputError(f"peer_identity must be a raw {crypto.KEY_BYTES}-byte public key (bytes),"
                             f" got {type(peer_identity).__name__}")
        tag = Tag(round, stage, "hello")
        ephemeral = crypto.new_private_key()
        mine = (crypto.public_bytes(ephemeral),
                crypto.public_bytes(identity) if identity is not None else b"")
        if initiator:
            transport.send(peer, tag, eph=mine[0], static=mine[1])
            theirs = _read_hello(transport.recv(peer, tag, timeout=timeout))
        else:
            theirs = _read_hello(transport.recv(peer, tag, timeout=timeout))
            transport.send(peer, tag, eph=mine[0], static=mine[1])
        if peer_identity is not None and theirs[1] != bytes(peer_identity):
            raise CryptoError(crypto.AUTH_FAILED)
        names = (transport.name, peer) if initiator else (peer, transport.name)
        send_key, recv_key = direction_keys(_LABEL, (*names, round, stage), ephemeral, identity, theirs,
                                            initiator=initiator)
        return cls(transport, peer, send_key=send_key, recv_key=recv_key)

    def send(self, tag: Tag, fields: Mapping[str, Any] | None = None, /, **kwfields: Any) -> int:
        """Encrypt ``fields`` to the peer under ``tag``; return the bytes put on the wire."""
        check_tag(tag)
        self._check_usable()
        if self._send_seq > crypto.MAX_SEQ:
            raise ProtocolError("secure channel exhausted its sequence numbers; establish a new one")
        inner = encode(self.name, self._peer, tag, {**(fields or {}), **kwfields})
        seq = self._send_seq
        sealed = crypto.seal(self._send_key, seq, _associated(self.name, self._peer, tag, seq), inner)
        self._send_seq += 1
        return self._transport.send(self._peer, tag, ct=sealed)

    def recv(self, tag: Tag, *, timeout: float | None = None) -> Message:
        """Receive, authenticate and decrypt the next message from the peer, awaited under ``tag``.

        A frame that fails any check (including a transport-level address or tag
        mismatch) raises CryptoError; a missing peer still raises the transport's
        PeerTimeoutError / PeerFailedError.
        """
        check_tag(tag)
        self._check_usable()
        seq = self._recv_seq
        try:
            outer = self._transport.recv(self._peer, tag, timeout=timeout)
            sealed = outer["ct"]
            if not isinstance(sealed, bytes) or len(outer.fields) != 1:
                raise CryptoError(crypto.AUTH_FAILED)
            inner = crypto.open_sealed(self._recv_key, seq,
                                       _associated(self._peer, self.name, tag, seq), sealed)
            message = decode(inner)
            if (message.src, message.dst, message.tag) != (self._peer, self.name, tag):
                raise CryptoError(crypto.AUTH_FAILED)
        except (CryptoError, DecodeError, TagMismatchError):
            self._broken = True
            raise CryptoError(crypto.AUTH_FAILED) from None
        self._recv_seq += 1
        return message

    def _check_usable(self) -> None:
        if self._broken:
            raise CryptoError(crypto.AUTH_FAILED)


def direction_keys(label: str, context: tuple, ephemeral: X25519PrivateKey, identity: X25519PrivateKey | None,
                   theirs: tuple[bytes, bytes], *, initiator: bool) -> tuple[bytes, bytes]:
    """(send key, receive key) of one side of the handshake (see the module docstring).

    ``theirs`` is the peer's (ephemeral, static-or-empty) public keys; ``context`` (the
    initiator's and responder's names first) and both sides' keys go into the HKDF info,
    so keys differ whenever any of them does.
    """
    mine = (crypto.public_bytes(ephemeral), crypto.public_bytes(identity) if identity is not None else b"")
    init_keys, resp_keys = (mine, theirs) if initiator else (theirs, mine)
    info = crypto.transcript(label, *context, init_keys[0], resp_keys[0], init_keys[1], resp_keys[1])
    okm = crypto.hkdf_sha256(_handshake_ikm(ephemeral, identity, theirs, initiator), info=info,
                             length=2 * crypto.KEY_BYTES)
    i2r, r2i = okm[:crypto.KEY_BYTES], okm[crypto.KEY_BYTES:]
    return (i2r, r2i) if initiator else (r2i, i2r)


def read_hello(eph: object, static: object) -> tuple[bytes, bytes]:
    """A peer's hello keys, checked: a 32-byte ephemeral key and an empty or 32-byte static one."""
    if not (isinstance(eph, bytes) and len(eph) == crypto.KEY_BYTES and isinstance(static, bytes)
            and len(static) in (0, crypto.KEY_BYTES)):
        raise CryptoError(crypto.AUTH_FAILED)
    return eph, static


def _read_hello(message: Message) -> tuple[bytes, bytes]:
    """The peer's (ephemeral, static-or-empty) public keys from its hello."""
    try:
        eph, static = message["eph"], message["static"]
    except ProtocolError:
        raise CryptoError(crypto.AUTH_FAILED) from None
    return read_hello(eph, static)


def _handshake_ikm(ephemeral: X25519PrivateKey, identity: X25519PrivateKey | None,
                   theirs: tuple[bytes, bytes], initiator: bool) -> bytes:
    """ee || es || se, computed from this side's view (see the module docstring)."""
    their_eph, their_static = theirs
    parts = [crypto.agree(ephemeral, their_eph)]
    # es = DH(e_i, s_r): the initiator uses its ephemeral, the responder its identity
    if initiator and their_static:
        parts.append(crypto.agree(ephemeral, their_static))
    if not initiator and identity is not None:
        parts.append(crypto.agree(identity, their_eph))
    # se = DH(s_i, e_r)
    if initiator and identity is not None:
        parts.append(crypto.agree(identity, their_eph))
    if not initiator and their_static:
        parts.append(crypto.agree(ephemeral, their_static))
    return b"".join(parts)


def _associated(src: str, dst: str, tag: Tag, seq: int) -> bytes:
    return crypto.transcript("securefl/channel/msg", src, dst, tag.round, tag.stage, tag.name, seq)
