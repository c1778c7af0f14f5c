"""Paillier key primitives: g = n + 1, CRT decryption, DJN fixed-base randomness.

* ``g = n + 1`` so ``g^m = 1 + m n (mod n^2)``: encoding a plaintext is one multiply.
* Randomness is the Damgård–Jurik–Nielsen short-exponent variant (DJN, "A
  generalization of Paillier's public-key system with applications to electronic
  voting", IJIS 2010, §4.2; also ABY's libdjn and SecretFlow HEU): the public key
  holds ``hs = h^n mod n^2`` for ``h = -x^2 mod n`` with random ``x``; a ciphertext is
  ``(1 + m n) * hs^a mod n^2`` with ``a`` uniform in ``[0, 2^ceil(k/2))`` (1024 bits
  for a 2048-bit n). Semantic security rests on DCR plus the standard assumption
  that ``hs^a`` with such short exponents is indistinguishable from a random n-th
  residue; exhaustive or kangaroo search over ``a`` costs ~2^(k/4) = 2^512. Because
  the base is fixed, ``hs^a`` is a product of ceil(k/2)/7 entries of a precomputed
  window table (7-bit windows, ~9.6 MB for 2048-bit keys, built once per key in
  ~70 ms): 0.6 ms per encryption vs 4.1 ms for a 1024-bit powmod and ~8 ms for the
  textbook ``r^n`` (all measured on the development machine).
* Decryption uses CRT: ``c^(p-1) mod p^2`` and ``c^(q-1) mod q^2`` (half-size
  moduli, half-size exponents), recombined mod n.
* p and q come from ``secrets.randbits`` candidates (top two bits set) passed to
  GMP's ``next_prime``; nothing is seeded. Python big-int code is not constant time.
"""

from __future__ import annotations

import secrets
import threading
from typing import Sequence

import gmpy2
from gmpy2 import mpz

from protocols.errors import CryptoError, InputError
from protocols.he.base import key_fingerprint
from protocols.he.parallel import parallel_map

WINDOW_BITS = 7


def _byte_len(value: int) -> int:
    return (int(value).bit_length() + 7) // 8


def _random_prime(bits: int) -> mpz:
    """A uniformly started random prime of exactly ``bits`` bits (OS randomness)."""
    while True:
        candidate = mpz(secrets.randbits(bits)) | (mpz(3) << (bits - 2)) | 1
        prime = gmpy2.next_prime(candidate)
        if prime.bit_length() == bits:
            return prime


class PaillierPublicKey:
    """``n`` and the DJN base ``hs``; encrypts packed plaintexts in [0, n)."""

    __slots__ = ("n", "nsquare", "hs", "alpha_bits", "key_id", "_table", "_lock")

    def __init__(self, n: mpz, hs: mpz) -> None:
        """Internal: use :meth:`from_parts` (which validates)."""
        self.n, self.nsquare, self.hs = n, n * n, hs
        self.alpha_bits = (n.bit_length() + 1) // 2
        self.key_id = key_fingerprint(b"paillier", self.n_bytes(), self.hs_bytes())
        self._table: list[list[mpz]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_parts(cls, n: int, hs: int) -> "PaillierPublicKey":
        """Validate and wrap a public key; InputError on values that cannot be a key."""
        n, hs = mpz(n), mpz(hs)
        if n < 15 or n % 2 == 0 or gmpy2.is_square(n) or gmpy2.is_prime(n):
            raise InputError("Paillier modulus n must be an odd composite non-square")
        if not 1 < hs < n * n or gmpy2.gcd(hs, n) != 1:
            raise InputError("Paillier DJN base hs must be a unit mod n^2 other than 1")
        if hs % n in (1, n - 1) or hs * hs % (n * n) == 1:  # hs^r would be +-1 or (1+n)^k: no hiding
            raise InputError("Paillier DJN base hs is of a form that hides nothing")
        return cls(n, hs)

    @property
    def key_bits(self) -> int:
        return int(self.n.bit_length())

    def n_bytes(self) -> bytes:
        return int(self.n).to_bytes(_byte_len(self.n), "big")

    def hs_bytes(self) -> bytes:
        return int(self.hs).to_bytes(_byte_len(self.nsquare), "big")

    @property
    def ciphertext_bytes(self) -> int:
        return _byte_len(self.nsquare)

    def is_valid_ciphertext(self, c: int) -> bool:
        """0 < c < n^2 and c is a unit mod n (every honest ciphertext is)."""
        return 0 < c < self.nsquare and gmpy2.gcd(c, self.n) == 1

    @staticmethod
    def raw_encrypt(n: int, plaintext: int, rn: int) -> int:
        """Textbook ``g^m r^n mod n^2`` with g = n + 1, given ``rn = r^n mod n^2`` (for tests)."""
        nsquare = n * n
        return (1 + plaintext * n) * rn % nsquare

    def _fixed_base_table(self) -> list[list[mpz]]:
        """``table[i][d] = hs^(d * 2^(7 i))``, built once (rows in parallel threads)."""
        with self._lock:
            if self._table is None:
                windows = -(-self.alpha_bits // WINDOW_BITS)
                bases, base = [], self.hs
                for _ in range(windows):
                    bases.append(base)
                    base = gmpy2.powmod(base, 1 << WINDOW_BITS, self.nsquare)
                self._table = parallel_map(self._table_rows, bases, None, min_items=8)
            return self._table

    def _table_rows(self, bases: Sequence[mpz]) -> list[list[mpz]]:
        rows = []
        for base in bases:
            row = [mpz(1), base]
            for _ in range(2, 1 << WINDOW_BITS):
                row.append(row[-1] * base % self.nsquare)
            rows.append(row)
        return rows

    def encrypt_with_alpha(self, plaintext: int, alpha: int) -> mpz:
        """``(1 + m n) * hs^alpha mod n^2`` through the window table."""
        table, nsquare, mask = self._fixed_base_table(), self.nsquare, (1 << WINDOW_BITS) - 1
        acc = (1 + mpz(plaintext) * self.n) % nsquare
        for row in table:
            acc = acc * row[alpha & mask] % nsquare
            alpha >>= WINDOW_BITS
        if alpha:
            raise InputError("DJN exponent longer than the key's randomness length")
        return acc

    def _encrypt_chunk(self, plaintexts: Sequence[int]) -> list[mpz]:
        return [self.encrypt_with_alpha(m, secrets.randbits(self.alpha_bits)) for m in plaintexts]

    def encrypt_plaintexts(self, plaintexts: Sequence[int], workers: int | None) -> list[mpz]:
        """Fresh encryptions of plaintexts in [0, n), spread over threads."""
        self._fixed_base_table()
        return parallel_map(self._encrypt_chunk, plaintexts, workers)


class PaillierPrivateKey:
    """p and q with CRT constants. Never serialized; repr hides everything secret."""

    __slots__ = ("public", "_p", "_q", "_psquare", "_qsquare", "_hp", "_hq", "_q_inv_p")

    def __init__(self, p: mpz, q: mpz, hs: mpz) -> None:
        """Internal: use :meth:`generate` or :meth:`from_primes` (which validate)."""
        self.public = PaillierPublicKey.from_parts(p * q, hs)
        self._p, self._q = p, q
        self._psquare, self._qsquare = p * p, q * q
        self._hp = self._h_constant(p, self._psquare)
        self._hq = self._h_constant(q, self._qsquare)
        self._q_inv_p = gmpy2.invert(q, p)

    def _h_constant(self, prime: mpz, square: mpz) -> mpz:
        g_part = gmpy2.powmod(self.public.n + 1, prime - 1, square)
        return gmpy2.invert((g_part - 1) // prime, prime)

    @classmethod
    def generate(cls, key_bits: int) -> "PaillierPrivateKey":
        """Fresh primes of key_bits/2 bits each; n has exactly key_bits bits."""
        half = key_bits // 2
        while True:
            p, q = _random_prime(half), _random_prime(key_bits - half)
            n = p * q
            if p != q and n.bit_length() == key_bits and gmpy2.gcd(n, (p - 1) * (q - 1)) == 1 \
                    and abs(p - q).bit_length() > half - 64:
                return cls(p, q, cls._random_hs(n))

    @classmethod
    def from_primes(cls, p: int, q: int, *, hs: int | None = None) -> "PaillierPrivateKey":
        """A key from given primes (tests, known-answer vectors); validates them."""
        p, q = mpz(p), mpz(q)
        if p == q or not (gmpy2.is_prime(p, 50) and gmpy2.is_prime(q, 50)):
            raise InputError("Paillier p and q must be distinct primes")
        if gmpy2.gcd(p * q, (p - 1) * (q - 1)) != 1:
            raise InputError("Paillier needs gcd(pq, (p-1)(q-1)) = 1")
        return cls(p, q, cls._random_hs(p * q) if hs is None else mpz(hs))

    @staticmethod
    def _random_hs(n: mpz) -> mpz:
        while True:
            x = mpz(secrets.randbelow(int(n) - 2) + 2)
            if gmpy2.gcd(x, n) == 1:
                return gmpy2.powmod((-x * x) % n, n, n * n)

    def decrypt_one(self, c: int) -> mpz:
        """The plaintext in [0, n) of one ciphertext (CRT)."""
        c = mpz(c)
        if not 0 < c < self.public.nsquare:
            raise CryptoError("decryption failed")
        m_p = self._half(gmpy2.powmod(c % self._psquare, self._p - 1, self._psquare), self._p, self._hp)
        m_q = self._half(gmpy2.powmod(c % self._qsquare, self._q - 1, self._qsquare), self._q, self._hq)
        return self._combine(m_p, m_q)

    @staticmethod
    def _half(u: mpz, prime: mpz, h: mpz) -> mpz:
        return (u - 1) // prime * h % prime

    def _combine(self, m_p: mpz, m_q: mpz) -> mpz:
        return m_q + self._q * ((m_p - m_q) * self._q_inv_p % self._p)

    def _decrypt_chunk(self, cts: Sequence[mpz]) -> list[mpz]:
        if any(not 0 < c < self.public.nsquare for c in cts):
            raise CryptoError("decryption failed")
        ups = gmpy2.powmod_base_list([c % self._psquare for c in cts], self._p - 1, self._psquare)
        uqs = gmpy2.powmod_base_list([c % self._qsquare for c in cts], self._q - 1, self._qsquare)
        return [self._combine(self._half(up, self._p, self._hp), self._half(uq, self._q, self._hq))
                for up, uq in zip(ups, uqs)]

    def decrypt_plaintexts(self, cts: Sequence[mpz], workers: int | None) -> list[mpz]:
        """Plaintexts in [0, n) of many ciphertexts, spread over threads."""
        return parallel_map(self._decrypt_chunk, cts, workers)

    def __getstate__(self) -> None:
        raise TypeError("a Paillier private key cannot be pickled")

    def __repr__(self) -> str:
        return f"PaillierPrivateKey(key_id={self.public.key_id[:12]}..., primes=<hidden>)"
