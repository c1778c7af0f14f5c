"""Peer sum: every member of a fixed group learns the sum of the group's vectors, not each vector.

TDCD's hubs need, for each of their clients' rows, the sum of every other silo's
output. Sent in clear, each hub would read each other silo's output row by row. Here
each member sends every other member its vector in fixed point plus one pairwise mask
per other member, the lower name adding it and the higher subtracting it; the members'
masked vectors then sum to the plain sum, mod 2^64, with every mask cancelled.

Keys: each member makes a fresh X25519 key from the OS (:func:`PeerSum.agree`) and
sends its public half to the others once; each pair agrees one DH secret, and its
seed for one exchange is HKDF(DH) with ``info`` naming the exchange's tag, both members and both keys, and a
member refuses a tag it has used, so no two exchanges reuse a mask. Neither the
private key nor the DH secrets leave the object.

What a member learns (semi-honest, no dropouts): the total, hence the others' sum.
Each vector it receives still carries the mask its sender shares with every third
member, so with three or more members no single member reads another's vector; two
members together can unmask a third when the group has three. With two members the
total minus one's own vector *is* the other's, which no protocol can hide.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from protocols.channels import crypto, fixedpoint
from protocols.channels.prg import DEFAULT_PRG, MaskAccumulator
from protocols.codec import Tag, check_tag
from protocols.errors import InputError, ProtocolError
from protocols.transport.base import Transport

KEY_TAG = Tag(0, "peersum", "key")


class PeerSum:
    """One member's side of a peer-sum group, after the key agreement (:meth:`agree`)."""

    def __init__(self, transport: Transport, members: tuple[str, ...], private: X25519PrivateKey,
                 publics: dict[str, bytes], *, scale_bits: int, prg: str) -> None:
        self._transport, self.members, self._publics = transport, members, publics
        # one Diffie-Hellman per peer; each exchange then derives its own seed from it by HKDF
        self._shared = {peer: crypto.agree(private, key) for peer, key in publics.items() if peer != transport.name}
        self.scale_bits, self._prg = scale_bits, prg
        self._used: set[Tag] = set()  # a tag used twice would reuse its masks

    @classmethod
    def agree(cls, transport: Transport, *, members: Sequence[str], scale_bits: int = 24,
              prg: str = DEFAULT_PRG) -> "PeerSum":
        """Swap fresh public keys with every other member of ``members`` (this party among them)."""
        group = tuple(sorted(set(members)))
        if transport.name not in group or len(group) != len(members):
            raise InputError(f"peer sum: {transport.name!r} must be one of the members, each named once,"
                             f" got {list(members)}")
        fixedpoint.max_abs_value(scale_bits, len(group))  # checks scale_bits
        private = crypto.new_private_key()
        others = [m for m in group if m != transport.name]
        for peer in others:
            transport.send(peer, KEY_TAG, public=crypto.public_bytes(private))
        publics = {transport.name: crypto.public_bytes(private)}
        for peer in others:
            key = transport.recv(peer, KEY_TAG)["public"]
            if not isinstance(key, bytes) or not crypto.usable_public(key):
                raise ProtocolError(f"{transport.name!r}: the peer-sum key from {peer!r} is not a usable"
                                    f" {crypto.KEY_BYTES}-byte X25519 public key")
            publics[peer] = key
        return cls(transport, group, private, publics, scale_bits=scale_bits, prg=prg)

    def _seed(self, peer: str, tag: Tag) -> bytes:
        lo, hi = sorted((self._transport.name, peer))
        info = crypto.transcript("securefl/peersum/pairwise", tag.round, tag.stage, tag.name, lo, hi,
                                 self._publics[lo], self._publics[hi])
        return crypto.hkdf_sha256(self._shared[peer], info=info)

    def total(self, vector: np.ndarray, *, tag: Tag) -> np.ndarray:
        """The members' sum of ``vector`` (float64, same shape), each member calling with the same ``tag``."""
        check_tag(tag)
        if tag in self._used:
            raise InputError(f"peer sum: tag {tag} was used already; its masks would repeat and reveal the"
                             " difference of the two vectors")
        self._used.add(tag)
        values = np.asarray(vector, dtype=np.float64)
        me = self._transport.name
        masked = fixedpoint.encode(values.reshape(-1), scale_bits=self.scale_bits,
                                   n_summands=len(self.members))
        others = [m for m in self.members if m != me]
        adder = MaskAccumulator(masked, self._prg)
        for peer in others:
            adder.add(self._seed(peer, tag), 1 if me < peer else -1)
        for peer in others:
            self._transport.send(peer, tag, masked=masked)
        total = masked.copy()
        for peer in others:
            theirs = self._transport.recv(peer, tag)["masked"]
            if not isinstance(theirs, np.ndarray) or theirs.dtype != np.uint64 or theirs.shape != masked.shape:
                raise ProtocolError(f"{me!r}, {tag}: the masked vector from {peer!r} is not {masked.size} uint64"
                                    " words")
            np.add(total, theirs, out=total)
        return fixedpoint.decode(total, scale_bits=self.scale_bits).reshape(values.shape)


__all__ = ["KEY_TAG", "PeerSum"]
