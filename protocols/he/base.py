"""The one interface both additively homomorphic backends (Paillier, CKKS) implement.

A :class:`SecretContext` is the key owner's: it generates keys, decrypts, and hands
out a :class:`PublicContext` (as TenSEAL's ``make_context_public``) that holds no
secret key and is the only context that crosses a channel. Anyone with the public
context encrypts and evaluates on :class:`EncryptedArray` values.

Layout, shared by both backends: an array is *packed* along its axis 0 -- each
ciphertext carries several values ("lanes") of one column. Hence

* ``enc @ W`` contracts the last axis (never the packed one) with a plain matrix;
* an elementwise plain multiplier must be constant along axis 0 when lanes are
  packed there (Paillier scales a whole ciphertext by one integer);
* summing over axis 0 adds ciphertexts block-wise and leaves the final sum over a
  ciphertext's lanes to the key owner after decryption, who then sees each lane's
  partial sum: ``sum(axis=0)`` refuses unless ``reveal_lane_sums=True`` (or the
  backend can sum lanes homomorphically: CKKS with Galois keys, Paillier with
  ``pack=False``). Mask the result first (:mod:`protocols.channels.masking`) and the
  key owner sees only masked lanes.

Results of plain operands carry no fresh randomness: ``enc * 0`` or a zero column of
``W`` gives the ciphertext 1, visibly Enc(0), and anyone holding ``enc`` can search for
a small plain multiplier from ``enc * w``. So a result that leaves the evaluator must
first get fresh randomness: adding a fresh encryption (as the masks of
:mod:`protocols.channels.masking` are, and as the interactive layer's engines add
one of zero) does it.
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping

import numpy as np

from protocols.errors import DepthExceededError, EncodingOverflowError, InputError  # noqa: F401 (re-export)


def key_fingerprint(*parts: bytes) -> str:
    """A short public identifier of a public key (SHA-256 of its encoding)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:32]


def as_plain(value: Any, what: str) -> np.ndarray:
    """A finite float64 array from user input, or InputError naming ``what``."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be numeric, got {type(value).__name__}: {exc}") from None
    if not np.all(np.isfinite(array)):
        raise InputError(f"{what} holds a non-finite value (nan or inf)")
    return array


def short_repr(value: Any, width: int = 32) -> str:
    """``repr(value)`` cut to ``width`` characters, for one-line errors about values a peer may send."""
    shown = repr(value)
    return shown if len(shown) <= width else shown[:width - 3] + "..."


def plaintext_to_encrypt(values: Any, bound: float | None, max_abs: float) -> tuple[np.ndarray, float]:
    """Checked plaintext for ``encrypt`` and its bound: non-empty, finite, within the bound."""
    plain = as_plain(values, "plaintext")
    try:
        limit = max_abs if bound is None else float(bound)
    except (TypeError, ValueError, OverflowError):
        limit = math.nan
    if plain.size == 0:
        raise InputError("cannot encrypt an empty array")
    if not 0 < limit < math.inf:
        raise InputError(f"bound must be a positive finite number, got {short_repr(bound)}")
    peak = float(np.max(np.abs(plain)))
    if peak > limit:
        raise EncodingOverflowError(f"|value| {peak:g} exceeds the encryption bound {limit:g}")
    return plain, limit


def bits_for(count: int) -> int:
    """Extra bits a sum of ``count`` terms can need: ceil(log2(count))."""
    return max(count - 1, 0).bit_length()


def bound_exponent(bound: float) -> int:
    """The smallest e with bound <= 2**e, so only the order of magnitude travels."""
    if bound <= 0:
        return -1074
    return math.ceil(math.log2(bound))


class PublicContext(ABC):
    """A public key plus parameters: encrypts and evaluates, never decrypts."""

    scheme: ClassVar[str]

    @property
    @abstractmethod
    def key_id(self) -> str:
        """Fingerprint of the public key; arrays under different keys never mix."""

    @property
    @abstractmethod
    def config(self) -> Any:
        """The frozen configuration the key was made with."""

    @abstractmethod
    def encrypt(self, values: Any, *, bound: float | None = None) -> "EncryptedArray":
        """Encrypt an array; ``|values| <= bound`` (default ``config.max_abs``) is checked."""

    @abstractmethod
    def serialize(self) -> bytes:
        """The public context as bytes for :func:`protocols.he.load_public_context`."""

    @abstractmethod
    def array_from_fields(self, fields: Mapping[str, Any]) -> "EncryptedArray":
        """Rebuild an array from :meth:`EncryptedArray.to_fields` output, validating it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicContext) and other.key_id == self.key_id

    def __hash__(self) -> int:
        return hash(self.key_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key_id={self.key_id[:12]}..., {self.config})"


class SecretContext(ABC):
    """The key owner's context. It is never serialized, pickled or sent."""

    scheme: ClassVar[str]

    @abstractmethod
    def public_context(self) -> PublicContext:
        """The matching public context (holds no secret key material)."""

    @abstractmethod
    def decrypt(self, array: "EncryptedArray") -> np.ndarray:
        """Decrypt to float64; CryptoError if the array is not under this key or is corrupt."""

    @abstractmethod
    def decrypt_raw(self, array: "EncryptedArray") -> Any:
        """Decrypt without rounding to float (Paillier: exact FixedPointArray), for unmasking."""

    @property
    def key_id(self) -> str:
        return self.public_context().key_id

    @property
    def config(self) -> Any:
        return self.public_context().config

    def encrypt(self, values: Any, *, bound: float | None = None) -> "EncryptedArray":
        """Encrypt with the public context (the result refers to it, not to this one)."""
        return self.public_context().encrypt(values, bound=bound)

    def __getstate__(self) -> None:
        raise TypeError(f"{type(self).__name__} holds a secret key and cannot be pickled")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key_id={self.key_id[:12]}..., secret=<hidden>)"


class EncryptedArray(ABC):
    """An encrypted float array with numpy-like shape and additive operations.

    ``a + b``, ``a - b``, ``-a`` (cipher or plain ``b``), ``a * c`` (plain ``c``),
    ``a @ W`` (plain ``W``), ``a.sum(axis)``. Shapes are checked exactly.
    """

    __array_ufunc__ = None  # make numpy defer to our reflected operators
    scheme: ClassVar[str]
    context: PublicContext
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    @abstractmethod
    def bound(self) -> float:
        """A public upper bound on ``|value|`` of every lane (grows with each operation)."""

    @property
    @abstractmethod
    def lanes_packed_on_axis0(self) -> bool:
        """True when several lanes of one ciphertext run along axis 0."""

    @property
    @abstractmethod
    def lane_shape(self) -> tuple[int, ...]:
        """Shape of the array of all lanes (padding and folded lanes included)."""

    @abstractmethod
    def lanes_to_values(self, lanes: np.ndarray) -> np.ndarray:
        """Logical values of a lane array: drop padding rows, add folded lanes."""

    @abstractmethod
    def encrypt_lanes(self, lanes: Any, bound: Any) -> "EncryptedArray":
        """Fresh encryption of raw lanes (``|lane| <= bound``) in this array's layout and
        scale: integers at ``scale_bits`` for Paillier, floats for CKKS. Used by masks."""

    @abstractmethod
    def to_fields(self) -> dict[str, Any]:
        """Codec-ready fields (bytes, ints, strs, lists); no secret material."""

    @classmethod
    def from_fields(cls, public_context: PublicContext, fields: Mapping[str, Any]) -> "EncryptedArray":
        """Rebuild an array received from a peer under ``public_context``."""
        return public_context.array_from_fields(fields)

    # --- what each backend implements (inputs already validated) ------------------
    @abstractmethod
    def _add_cipher(self, other: "EncryptedArray") -> "EncryptedArray": ...

    @abstractmethod
    def _add_plain(self, plain: np.ndarray) -> "EncryptedArray": ...

    @abstractmethod
    def _mul_plain(self, plain: np.ndarray) -> "EncryptedArray": ...

    @abstractmethod
    def _matmul_plain(self, matrix: np.ndarray) -> "EncryptedArray": ...

    @abstractmethod
    def _sum_axis(self, axis: int, reveal_lane_sums: bool) -> "EncryptedArray": ...

    @abstractmethod
    def _negate(self) -> "EncryptedArray": ...

    # --- validated public operations ----------------------------------------------
    def _check_partner(self, other: "EncryptedArray") -> None:
        if not isinstance(other, EncryptedArray) or other.scheme != self.scheme:
            raise InputError(f"cannot combine a {self.scheme} array with {type(other).__name__}")
        if other.context.key_id != self.context.key_id:
            raise InputError("cannot combine ciphertexts under two different public keys "
                             f"({self.context.key_id[:12]}... and {other.context.key_id[:12]}...)")
        if other.shape != self.shape:
            raise InputError(f"shape mismatch: {self.shape} and {other.shape}")

    def _broadcast_plain(self, value: Any, what: str) -> np.ndarray:
        plain = as_plain(value, what)
        try:
            shape = np.broadcast_shapes(plain.shape, self.shape)
        except ValueError:
            shape = None
        if shape != self.shape:
            raise InputError(f"{what} of shape {plain.shape} does not broadcast to the encrypted "
                             f"shape {self.shape}")
        return np.broadcast_to(plain, self.shape)

    def add(self, other: Any) -> "EncryptedArray":
        """Elementwise sum with another encrypted array (same shape) or a plain array."""
        if isinstance(other, EncryptedArray):
            self._check_partner(other)
            return self._add_cipher(other)
        return self._add_plain(self._broadcast_plain(other, "plain addend"))

    def sub(self, other: Any) -> "EncryptedArray":
        """Elementwise difference ``self - other``."""
        if isinstance(other, EncryptedArray):
            self._check_partner(other)
            return self._add_cipher(other._negate())
        return self._add_plain(-self._broadcast_plain(other, "plain subtrahend"))

    def neg(self) -> "EncryptedArray":
        """Elementwise negation."""
        return self._negate()

    def mul(self, other: Any) -> "EncryptedArray":
        """Elementwise product with a plain scalar or array broadcastable to ``shape``."""
        if isinstance(other, EncryptedArray):
            raise InputError("ciphertext x ciphertext multiplication is not supported: "
                             "these schemes are used additively; multiply by a plain value")
        plain = self._broadcast_plain(other, "plain multiplier")
        if self.lanes_packed_on_axis0 and self.ndim > 0 and self.shape[0] > 1:
            if not np.all(plain == plain[:1]):
                raise InputError(
                    f"a multiplier for the packed {self.scheme} array of shape {self.shape} must be "
                    "constant along axis 0 (lanes of one ciphertext share one multiplier); "
                    "use shape (1, ...) or encrypt unpacked")
        return self._mul_plain(plain)

    def matmul(self, matrix: Any) -> "EncryptedArray":
        """``self @ matrix`` for encrypted (batch, d_in) and plain (d_in, d_out)."""
        plain = as_plain(matrix, "plain matrix")
        if self.ndim != 2 or plain.ndim != 2 or self.shape[1] != plain.shape[0] or plain.shape[1] == 0:
            raise InputError(f"matmul needs encrypted (n, d_in) @ plain (d_in, d_out) with d_out > 0; got shapes "
                             f"{self.shape} and {plain.shape}")
        return self._matmul_plain(plain)

    def sum(self, axis: int | None = None, *, reveal_lane_sums: bool = False) -> "EncryptedArray":
        """Sum over one axis, or over all axes when ``axis`` is None (see module doc)."""
        if axis is None:
            out: EncryptedArray = self
            while out.ndim > 0:
                out = out._sum_axis(out.ndim - 1, reveal_lane_sums)
            return out
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
                or not -self.ndim <= axis < self.ndim:
            raise InputError(f"axis {axis!r} is out of range for shape {self.shape}")
        return self._sum_axis(int(axis) % self.ndim, reveal_lane_sums)

    __add__ = add
    __radd__ = add
    __sub__ = sub
    __neg__ = neg
    __mul__ = mul
    __rmul__ = mul
    __matmul__ = matmul

    def __rsub__(self, other: Any) -> "EncryptedArray":
        return self._negate().add(other)

    def __rmatmul__(self, other: Any) -> "EncryptedArray":
        raise InputError("plain @ encrypted contracts the packed axis 0, which is not supported; "
                         "encrypt the transpose and compute enc(X.T) @ plain.T instead")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, key_id={self.context.key_id[:12]}...)"
