"""The three encrypted products of the interactive layer, behind one interface per side.

Per training step the evaluator (active party) needs, with a = the key owner's
activations (batch x n), W~ its masked weights (n x m), dz = dL/dz (batch x m) and
E = eps_acc the key owner's accumulated noise (n x m):

* forward:     Enc(a) @ W~    -> masked, decrypted by the key owner, unmasked here;
* weight grad: Enc(a).T @ dz  -> masked, decrypted by the key owner, unmasked here;
* input grad:  dz @ W~.T - dz @ Enc(E).T -> re-randomised, for the key owner to read.

:class:`GenericPassive` / :class:`GenericActive` use only the EncryptedArray API
(Paillier or CKKS; ``Enc(a)`` and ``Enc(a.T)`` both travel because ``enc @ W``
contracts the last axis only). :class:`~protocols.interactive.packed_engines.PackedPassive`
/ ``PackedActive`` run the same products slot-packed with rotations, which is what makes
CKKS fast; the layer (:mod:`protocols.interactive.layer`) picks one.

The key owner sends ``Enc(a)`` first and ``Enc(a.T)`` with ``Enc(E)`` in a second
message (:meth:`PassiveEngine.encrypt_backward`), so that it encrypts them while the
evaluator computes the forward product; the evaluator may start the input gradient
in a helper process while it computes the weight gradient
(:meth:`ActiveEngine.start_input_grad`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Mapping

import numpy as np

from protocols.channels import AdditiveMask
from protocols.errors import DecodeError, EncodingOverflowError, InputError
from protocols.he import FixedPointArray, PublicContext, SecretContext
from protocols.he.fixedpoint import encode_fixed
from protocols.interactive.ckks_engine import bound_exponent
from protocols.interactive.sealwire import prefixed, unprefixed


class PassiveEngine(ABC):
    """Key owner's half: encrypt a and E, open what the evaluator returns."""

    def __init__(self, n_in: int, n_out: int, bound: float) -> None:
        self.n_in, self.n_out, self.bound, self.rows = n_in, n_out, float(bound), 0

    @abstractmethod
    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        """Enc(a) for the forward product, codec-ready."""

    @abstractmethod
    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        """Enc(a.T) (prefix ``g``) for the weight gradient and Enc(E) (prefix ``e``) for the input gradient."""

    @abstractmethod
    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        """Decrypt a masked product ("forward" or "weight") and subtract ``minus`` from it."""

    @abstractmethod
    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        """dL/da (batch x n_in) from the evaluator's re-randomised ciphertexts."""

    def _expect(self, kind: str) -> tuple[int, int]:
        if kind not in ("forward", "weight"):
            raise InputError(f"unknown product kind {kind!r}")
        return (self.rows, self.n_out) if kind == "forward" else (self.n_in, self.n_out)


class ActiveEngine(ABC):
    """Evaluator's half: the products with its plaintext matrices."""

    def __init__(self, n_in: int, n_out: int) -> None:
        self.n_in, self.n_out, self.rows = n_in, n_out, 0

    @abstractmethod
    def load_input(self, fields: Mapping[str, Any], *, rows: int) -> None:
        """Take Enc(a) of a batch of ``rows`` rows."""

    @abstractmethod
    def load_backward(self, fields: Mapping[str, Any]) -> None:
        """Take Enc(a.T) and Enc(E) of the loaded batch (a training step)."""

    @abstractmethod
    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        """Masked Enc(a @ w) fields and the mask state."""

    @abstractmethod
    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        """Masked Enc(a.T @ dz) fields and the mask state."""

    @abstractmethod
    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        """The key owner's reply minus the mask."""

    @abstractmethod
    def input_grad(self, dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        """Enc(dz @ w.T - dz @ E.T) fields (batch x n_in, transposed on the wire)."""

    def prepare_forward(self, w: np.ndarray) -> None:
        """Say that the next :meth:`forward` will likely take ``w`` (work may start now; here: none)."""

    def start_input_grad(self, dz: np.ndarray, w: np.ndarray) -> Callable[[], dict[str, Any]]:
        """Begin :meth:`input_grad`; the returned call gives its fields (here: computes them then)."""
        dz, w = np.array(dz, copy=True), np.array(w, copy=True)
        return lambda: self.input_grad(dz, w)

    def close(self) -> None:
        """Release helper processes (none here)."""


def check_shape(what: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> None:
    """DecodeError naming ``what`` unless ``shape`` is ``expected``."""
    if tuple(shape) != tuple(expected):
        raise DecodeError(f"{what} has shape {tuple(shape)}, expected {tuple(expected)}")


def peer_array(fields: Mapping[str, Any], name: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """The finite float array ``name`` of a message from the other party; DecodeError otherwise."""
    values = fields.get(name)
    if not isinstance(values, np.ndarray) or values.dtype.kind != "f":
        raise DecodeError(f"the {what} lacks its float array {name!r}")
    check_shape(what, values.shape, shape)
    if not np.all(np.isfinite(values)):
        raise DecodeError(f"the {what} holds a value that is not finite")
    return values.astype(np.float64, copy=False)


def reply_values(reply: Mapping[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """The values of the key owner's masked reply (:func:`peer_array`)."""
    return peer_array(reply, "values", shape, "masked reply")


class GenericPassive(PassiveEngine):
    """Key owner over the EncryptedArray API (Paillier: exact fixed point)."""

    def __init__(self, secret: SecretContext, n_in: int, n_out: int, bound: float) -> None:
        super().__init__(n_in, n_out, bound)
        self.secret, self.public = secret, secret.public_context()

    def encrypt_input(self, a: np.ndarray) -> dict[str, Any]:
        self.rows = a.shape[0]
        return self.public.encrypt(a, bound=self.bound).to_fields()

    def encrypt_backward(self, a: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
        bound = 2.0 ** bound_exponent(float(np.max(np.abs(noise), initial=0.0)))
        return {**prefixed("g", self.public.encrypt(a.T, bound=self.bound).to_fields()),
                **prefixed("e", self.public.encrypt(noise, bound=bound).to_fields())}

    def open_masked(self, fields: Mapping[str, Any], kind: str, minus: np.ndarray) -> dict[str, Any]:
        array = self.public.array_from_fields(fields)
        check_shape(f"masked {kind} product", array.shape, self._expect(kind))
        raw = self.secret.decrypt_raw(array)
        if isinstance(raw, FixedPointArray):  # exact: subtract in the integers, mask intact
            values = raw.values - encode_fixed(minus, raw.scale_bits)
            return FixedPointArray(np.asarray(values, dtype=object), raw.scale_bits).to_fields()
        return {"values": np.asarray(raw, dtype=np.float64) - minus}

    def open_input_grad(self, fields: Mapping[str, Any]) -> np.ndarray:
        array = self.public.array_from_fields(fields)
        check_shape("input gradient", array.shape, (self.n_in, self.rows))
        return self.secret.decrypt(array).T


class GenericActive(ActiveEngine):
    """Evaluator over the EncryptedArray API; masks with AdditiveMask.

    ``mask_bits`` (CKKS): the statistical hiding every mask must give; a product whose
    values leave less room under the context's value limit is an EncodingOverflowError,
    not a weaker mask. Paillier masks hide with AdditiveMask's default. With CKKS, unlike
    the packed engine (:mod:`protocols.interactive.ckks_evaluator`), the low bits of the
    key owner's decrypted coefficients are not flooded (TenSEAL encodes every mask) and
    the slots of Enc(dL/da) that it does not read are not guarded (there, least squares
    over the key owner's own runs recovered nothing of dz at 6 x 3 x 5, unlike on the
    packed engine before its guard; measured once, not proven).
    """

    def __init__(self, public: PublicContext, n_in: int, n_out: int, *, mask_bits: int | None = None) -> None:
        super().__init__(n_in, n_out)
        self.public = public
        self.mask_bits = mask_bits if public.scheme == "ckks" else None
        self._a: Any = None
        self._a_t: Any = None
        self._e: Any = None

    def load_input(self, fields: Mapping[str, Any], *, rows: int) -> None:
        self.rows, self._a_t, self._e = rows, None, None
        self._a = self.public.array_from_fields(fields)
        check_shape("Enc(a)", self._a.shape, (rows, self.n_in))

    def load_backward(self, fields: Mapping[str, Any]) -> None:
        self._a_t = self.public.array_from_fields(unprefixed("g", fields))
        check_shape("Enc(a.T)", self._a_t.shape, (self.n_in, self.rows))
        self._e = self.public.array_from_fields(unprefixed("e", fields))
        check_shape("Enc(E)", self._e.shape, (self.n_in, self.n_out))

    def _masked(self, product: Any) -> tuple[dict[str, Any], AdditiveMask]:
        try:
            mask = AdditiveMask.draw(self.public, like=product, sigma_bits=self.mask_bits)
        except EncodingOverflowError as exc:
            raise EncodingOverflowError(f"{exc}: the generic CKKS engine cannot give this product's mask"
                                        f" InteractiveConfig.mask_bits={self.mask_bits} bits; lower mask_bits"
                                        " (weaker hiding) or use the packed engine (packed=True)") from None
        return mask.apply(product).to_fields(), mask

    def forward(self, w: np.ndarray) -> tuple[dict[str, Any], Any]:
        return self._masked(self._a @ w)

    def weight_grad(self, dz: np.ndarray) -> tuple[dict[str, Any], Any]:
        if self._a_t is None:
            raise InputError("no training batch is loaded")
        return self._masked(self._a_t @ dz)

    def unmask(self, state: Any, reply: Mapping[str, Any]) -> np.ndarray:
        if self.public.scheme != "paillier":
            return state.remove(reply_values(reply, state.shape))
        fixed = FixedPointArray.from_fields(reply)
        check_shape("masked reply", fixed.shape, state.shape)
        try:
            return state.remove(fixed)
        except InputError as exc:  # everything but the reply is this party's own
            raise DecodeError(f"the masked reply does not fit its mask: {exc}") from None
        except OverflowError:
            raise DecodeError("the masked reply holds a lane beyond the float range") from None

    def input_grad(self, dz: np.ndarray, w: np.ndarray) -> dict[str, Any]:
        if self._e is None:
            raise InputError("no training batch is loaded")
        out = (dz @ w.T).T - self._e @ dz.T
        zeros = np.zeros(out.lane_shape, dtype=object if self.public.scheme == "paillier" else float)
        return (out + out.encrypt_lanes(zeros, 0)).to_fields()  # fresh randomness for the key owner


__all__ = ["ActiveEngine", "GenericActive", "GenericPassive", "PassiveEngine", "check_shape", "peer_array",
           "reply_values"]
