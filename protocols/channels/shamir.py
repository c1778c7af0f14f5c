"""Shamir secret sharing over the prime field GF(2^521 - 1).

A secret of up to 64 bytes is read as a big-endian integer (< 2^512 < p) and hidden
in the constant term of a random polynomial of degree ``threshold - 1``; share ``i``
is the polynomial at ``x = i`` (1-based). Any ``threshold`` shares give the secret
back by Lagrange interpolation at 0; fewer give a value that is independent of it.

Why this field: the Mersenne prime 2^521 - 1 is a well-known prime larger than any
256- or 512-bit secret, so 32-byte seeds and X25519 private keys are shared whole,
with no chunking, and share arithmetic is plain Python integers (a round shares a
handful of secrets among at most thousands of parties, so this is not a hot path).
Coefficients come from :mod:`secrets` (OS randomness).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Sequence

from protocols.errors import CryptoError, InputError

PRIME = 2**521 - 1
SHARE_BYTES = 66  # ceil(521 / 8): a share's y as fixed-width big-endian bytes
MAX_SECRET_BYTES = 64


@dataclass(frozen=True)
class Share:
    """One share: the evaluation point ``x`` (1..n) and the value ``y`` in GF(p)."""

    x: int
    y: int

    def __post_init__(self) -> None:
        if not isinstance(self.x, int) or not 1 <= self.x < PRIME:
            raise InputError(f"share x must be an int in 1..p-1, got {self.x!r}")
        if not isinstance(self.y, int) or not 0 <= self.y < PRIME:
            raise InputError("share y must be a field element in 0..p-1")

    def __repr__(self) -> str:  # never print share values
        return f"Share(x={self.x}, y=...)"

    def y_bytes(self) -> bytes:
        """``y`` as :data:`SHARE_BYTES` big-endian bytes, for the wire."""
        return self.y.to_bytes(SHARE_BYTES, "big")

    @classmethod
    def from_bytes(cls, x: int, raw: bytes) -> "Share":
        """The share at ``x`` whose ``y`` travelled as :meth:`y_bytes`."""
        if len(raw) != SHARE_BYTES:
            raise InputError(f"a share value is {SHARE_BYTES} bytes, got {len(raw)}")
        return cls(x, int.from_bytes(raw, "big"))


def _check_counts(n: int, threshold: int) -> None:
    for name, value in (("n", n), ("threshold", threshold)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(f"{name} must be an int, got {value!r}")
    if not 1 <= threshold <= n:
        raise InputError(f"need 1 <= threshold <= n, got threshold={threshold}, n={n}")


def split_int(secret: int, n: int, threshold: int) -> list[Share]:
    """Share the field element ``secret`` into ``n`` shares, any ``threshold`` of which recover it."""
    _check_counts(n, threshold)
    if not 0 <= secret < PRIME:
        raise InputError("secret must be a field element in 0..p-1")
    coeffs = [secret] + [secrets.randbelow(PRIME) for _ in range(threshold - 1)]
    shares = []
    for x in range(1, n + 1):
        y = 0
        for c in reversed(coeffs):  # Horner
            y = (y * x + c) % PRIME
        shares.append(Share(x, y))
    return shares


def lagrange_weights(xs: Sequence[int], at: int) -> list[int]:
    """Weights w_i with f(at) = sum w_i * f(xs[i]) mod p for every f of degree < len(xs)."""
    if not xs:
        raise InputError("need at least one share")
    if len(set(xs)) != len(xs):
        raise InputError(f"shares must have distinct x, got {sorted(xs)}")
    weights = []
    for i, xi in enumerate(xs):
        num, den = 1, 1
        for j, xj in enumerate(xs):
            if j != i:
                num = num * (at - xj) % PRIME
                den = den * (xi - xj) % PRIME
        weights.append(num * pow(den, -1, PRIME) % PRIME)
    return weights


def interpolate_at_zero(shares: Sequence[Share]) -> int:
    """The value at 0 of the unique polynomial of degree < len(shares) through ``shares``."""
    weights = lagrange_weights([s.x for s in shares], 0)
    return sum(w * s.y for w, s in zip(weights, shares)) % PRIME


def split(secret: bytes, n: int, threshold: int) -> list[Share]:
    """Share a byte string of at most 64 bytes; see :func:`reconstruct`."""
    if not isinstance(secret, (bytes, bytearray)) or len(secret) > MAX_SECRET_BYTES:
        raise InputError(f"secret must be at most {MAX_SECRET_BYTES} bytes")
    return split_int(int.from_bytes(secret, "big"), n, threshold)


def reconstruct(shares: Sequence[Share], *, threshold: int, length: int) -> bytes:
    """The ``length``-byte secret from at least ``threshold`` shares (the first ``threshold`` are used).

    Fewer shares raise :class:`InputError`. Shares that interpolate to a value that
    cannot be a ``length``-byte secret raise :class:`CryptoError`.
    """
    _check_request(len(shares), threshold, length)
    return _secret_bytes(interpolate_at_zero(list(shares)[:threshold]), length)


def _check_request(count: int, threshold: int, length: int) -> None:
    """InputError unless ``count`` shares can give a secret of ``length`` bytes at ``threshold``."""
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
        raise InputError(f"threshold must be a positive int, got {threshold!r}")
    if count < threshold:
        raise InputError(f"need {threshold} shares to reconstruct, got {count}")
    if not 1 <= length <= MAX_SECRET_BYTES:
        raise InputError(f"secret length must be 1..{MAX_SECRET_BYTES} bytes, got {length}")


def _secret_bytes(value: int, length: int) -> bytes:
    """The interpolated ``value`` as ``length`` bytes; CryptoError if it cannot be such a secret."""
    if value >= 1 << (8 * length):
        raise CryptoError("shares do not reconstruct a valid secret")
    return value.to_bytes(length, "big")


def reconstruct_all(share_sets: Sequence[Sequence[Share]], *, threshold: int, length: int) -> list[bytes]:
    """Every ``length``-byte secret of ``share_sets``, whose sets hold shares at the same x's.

    Each secret is interpolated from its first ``threshold`` shares; every further share
    must lie on the same polynomial, so one wrong share among more than ``threshold``
    raises :class:`CryptoError` instead of giving a wrong secret (with exactly
    ``threshold`` shares a wrong one cannot be told apart). The Lagrange weights depend
    only on the x's, so they are computed once for all the sets.
    """
    if not share_sets:
        return []
    xs = [s.x for s in share_sets[0]]
    if any([s.x for s in shares] != xs for shares in share_sets):
        raise InputError("every secret's shares must come from the same x's, in the same order")
    _check_request(len(xs), threshold, length)
    at_zero = lagrange_weights(xs[:threshold], 0)
    checks = [lagrange_weights(xs[:threshold], x) for x in xs[threshold:]]
    out = []
    for shares in share_sets:
        ys = [s.y for s in shares]
        if any(sum(w * y for w, y in zip(ws, ys)) % PRIME != extra for ws, extra in zip(checks, ys[threshold:])):
            raise CryptoError("revealed shares are inconsistent: a responder sent a wrong share")
        out.append(_secret_bytes(sum(w * y for w, y in zip(at_zero, ys)) % PRIME, length))
    return out
