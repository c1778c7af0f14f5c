"""Curve25519 primitives for ECDH PSI: hashing IDs onto the curve, and blinding.

Hash to curve. An ID's UTF-8 bytes are hashed with SHA-256 under a fixed domain
prefix and a length prefix (``DOMAIN || len as 8 bytes big-endian || bytes``); the
digest, read little-endian with its top bit cleared and reduced mod p, is a field
element r. Elligator 2 (RFC 9380 section 6.7.1, ``map_to_curve_elligator2`` for
curve25519, Z = 2) maps r to the u-coordinate of a point on the curve. Why not use
the digest itself as u: a random u is on the curve for half the IDs and on its
twist for the other half, and scalar multiplication keeps that bit, so a peer
holding [a]H(x) could read one bit of every one of our IDs (curve or twist). With
Elligator 2 every hashed point is on the curve and that bit is always the same.

Blinding is X25519 (RFC 7748) with the party's secret scalar, through
``cryptography``. Clamping makes every scalar a multiple of 8, so a blinded value
lies in the prime-order subgroup whatever small-order part the input had, and
blinding commutes: X25519(a, X25519(b, u)) == X25519(b, X25519(a, u)).

The chunk kernels at the bottom run in worker processes: they take contiguous
byte blobs and fuse hashing and blinding into one pass per element.
"""

from __future__ import annotations

import hashlib
from array import array
from itertools import accumulate
from typing import Callable, Iterable

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from gmpy2 import invert, jacobi, mpz

from protocols.errors import ProtocolError

DOMAIN = b"securefl/psi/v1\x00"
POINT_BYTES = 32  # a u-coordinate, little-endian (RFC 7748)
TAG_BYTES = 16  # doubly-blinded values are truncated to this many bytes
P = 2**255 - 19
A = 486662  # Montgomery coefficient of curve25519: v^2 = u^3 + A u^2 + u
_P = mpz(P)
_A = mpz(A)
_MASK_255 = (1 << 255) - 1

Multiplier = Callable[[bytes], bytes]


def new_scalar() -> bytes:
    """A fresh secret scalar from the OS random source (never seeded)."""
    return X25519PrivateKey.generate().private_bytes_raw()


def id_digest(data: bytes) -> bytes:
    """SHA-256 of the domain-separated, length-prefixed ID bytes."""
    return hashlib.sha256(DOMAIN + len(data).to_bytes(8, "big") + data).digest()


def hash_to_field(data: bytes) -> int:
    """The field element for ``data``: its digest read little-endian, 255 bits, mod p."""
    return (int.from_bytes(id_digest(data), "little") & _MASK_255) % P


def map_to_curve(r: int) -> int:
    """Elligator 2 (RFC 9380 6.7.1): the u-coordinate of a curve point for field element r."""
    r = mpz(r)
    tv1 = 2 * r * r % _P
    if tv1 == _P - 1:  # exceptional case of RFC 9380: 1 + tv1 would be 0
        tv1 = mpz(0)
    x1 = -_A * invert(1 + tv1, _P) % _P
    gx1 = x1 * (x1 * (x1 + _A) + 1) % _P
    if jacobi(gx1, _P) < 0:  # gx1 is not a square: x2 = -x1 - A is on the curve instead
        x1 = (-x1 - _A) % _P
    return int(x1)


def hash_to_curve(data: bytes) -> bytes:
    """The 32-byte u-coordinate that an ID's UTF-8 bytes are mapped to."""
    return map_to_curve(hash_to_field(data)).to_bytes(POINT_BYTES, "little")


def hash_to_curve_batch(items: Iterable[bytes]) -> list[bytes]:
    """:func:`hash_to_curve` of every item, sharing one field inversion among all of them.

    Montgomery's trick replaces an inversion per element by three multiplications,
    which makes hashing about a quarter faster. Same results as :func:`hash_to_curve`.
    """
    sha256, from_bytes, prefix_bytes = hashlib.sha256, int.from_bytes, DOMAIN
    denominators = []
    for data in items:  # hash_to_field inlined; tv1 is reduced mod p, so r need not be
        r = mpz(from_bytes(sha256(prefix_bytes + len(data).to_bytes(8, "big") + data).digest(), "little")
                & _MASK_255)
        tv1 = 2 * r * r % _P
        denominators.append(1 + tv1 if tv1 != _P - 1 else mpz(1))  # RFC 9380 exceptional case
    prefix = []  # prefix[i]: product of denominators[:i]
    product = mpz(1)
    for d in denominators:
        prefix.append(product)
        product = product * d % _P
    inverse = invert(product, _P) if denominators else mpz(1)
    out = [b""] * len(denominators)
    for i in range(len(denominators) - 1, -1, -1):  # here inverse = 1 / product of denominators[:i+1]
        x1 = -_A * inverse * prefix[i] % _P
        inverse = inverse * denominators[i] % _P
        if jacobi(x1 * (x1 * (x1 + _A) + 1) % _P, _P) < 0:
            x1 = (-x1 - _A) % _P
        out[i] = int(x1).to_bytes(POINT_BYTES, "little")
    return out


def multiplier(scalar: bytes) -> Multiplier:
    """A function u -> X25519(scalar, u): the one scalar multiplication PSI uses.

    An all-zero result (the input was a small-order point, which honest hashing
    never yields) is raised as :class:`ProtocolError`.
    """
    exchange = X25519PrivateKey.from_private_bytes(scalar).exchange
    from_bytes = X25519PublicKey.from_public_bytes

    def mul(u: bytes) -> bytes:
        try:
            return exchange(from_bytes(u))
        except ValueError:
            raise ProtocolError("a blinded value is a small-order curve point (all-zero result);"
                                " the peer sent a malformed point") from None

    return mul


def hash_and_blind_chunk(scalar: bytes, blob: bytes, lengths: bytes) -> bytes:
    """Hash each ID in ``blob`` (UTF-8, cut by uint64 ``lengths``) to the curve and blind it.

    Returns the singly-blinded u-coordinates, 32 bytes each, in input order.
    """
    ends = list(accumulate(array("Q", lengths)))
    if (ends[-1] if ends else 0) != len(blob):
        raise ValueError(f"ID lengths cover {ends[-1] if ends else 0} bytes of a {len(blob)}-byte blob")
    mul = multiplier(scalar)
    points = hash_to_curve_batch(blob[start:end] for start, end in zip([0, *ends], ends))
    return b"".join([mul(u) for u in points])


def blind_chunk(scalar: bytes, blob: bytes, out_bytes: int) -> bytes:
    """Blind each 32-byte u-coordinate in ``blob``; keep the first ``out_bytes`` of each result."""
    if len(blob) % POINT_BYTES:
        raise ProtocolError(f"{len(blob)} bytes are not a whole number of {POINT_BYTES}-byte points")
    mul = multiplier(scalar)
    return b"".join([mul(blob[i:i + POINT_BYTES])[:out_bytes]
                     for i in range(0, len(blob), POINT_BYTES)])
