"""Additively homomorphic encryption of numpy arrays: Paillier and CKKS, one interface.

>>> secret = make_he("paillier", key_bits=2048)            # key owner
>>> public = load_public_context("paillier", secret.public_context().serialize())
>>> enc = public.encrypt(x)                                  # anyone with the public context
>>> y = (enc @ w + public.encrypt(mask)).to_fields()         # evaluator: fresh randomness, masked
>>> secret.decrypt(EncryptedArray.from_fields(secret.public_context(), y))  # x @ w + mask

A result of plain operands alone (``enc @ w + b``) is a deterministic function of
``enc``: see :mod:`protocols.he.base` before one leaves the evaluator.

Only public contexts and arrays cross a channel; a :class:`SecretContext` refuses
to be pickled and its repr hides the key. See :mod:`protocols.he.base` for the
packed layout and its rules, :mod:`protocols.he.paillier_keys` for the Paillier
speed-ups (g = n+1, CRT, DJN fixed-base randomness, lane packing, threads) and
:mod:`protocols.he.ckks` for the CKKS parameters and depth.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Callable, Mapping

from protocols.errors import InputError
from protocols.he.base import DepthExceededError, EncryptedArray, PublicContext, SecretContext
from protocols.he.ckks import CKKSConfig, CKKSPublicContext, CKKSSecretContext
from protocols.he.ckks_array import CKKSArray
from protocols.he.fixedpoint import FixedPointArray
from protocols.he.paillier import PaillierConfig, PaillierPublicContext, PaillierSecretContext
from protocols.he.paillier_array import PaillierArray


@dataclass(frozen=True)
class Backend:
    """How a scheme name maps to its configuration, key generation and loader."""

    name: str
    config_type: type
    generate: Callable[[Any], SecretContext]
    load_public: Callable[..., PublicContext]


def _load_paillier(data: bytes, *, insecure_small_keys_for_tests: bool,
                   workers: int | None) -> PublicContext:
    return PaillierPublicContext.load(
        data, insecure_small_keys_for_tests=insecure_small_keys_for_tests, workers=workers)


def _load_ckks(data: bytes, *, insecure_small_keys_for_tests: bool,
               workers: int | None) -> PublicContext:
    del insecure_small_keys_for_tests  # SEAL refuses insecure CKKS parameters itself
    return CKKSPublicContext.load(data, workers=workers)


BACKENDS: Mapping[str, Backend] = MappingProxyType({
    "paillier": Backend("paillier", PaillierConfig, PaillierSecretContext.generate, _load_paillier),
    "ckks": Backend("ckks", CKKSConfig, CKKSSecretContext.generate, _load_ckks),
})


def _backend(name: str) -> Backend:
    backend = BACKENDS.get(name) if isinstance(name, str) else None
    if backend is None:
        raise InputError(f"unknown HE scheme {name!r}; choose one of {sorted(BACKENDS)}")
    return backend


def make_config(name: str, /, **options: Any) -> Any:
    """The validated frozen config of scheme ``name`` (InputError naming bad options)."""
    backend = _backend(name)
    known = {f.name for f in fields(backend.config_type)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(f"unknown {name} parameter(s) {unknown}; expected some of {sorted(known)}")
    return backend.config_type(**options)


def make_he(name: str, /, **options: Any) -> SecretContext:
    """Generate a key pair for scheme ``name`` ("paillier" or "ckks") with keyword options."""
    return _backend(name).generate(make_config(name, **options))


def load_public_context(name: str, data: bytes, *, insecure_small_keys_for_tests: bool = False,
                        workers: int | None = None) -> PublicContext:
    """Validate and load a public context received from a key owner (never unpickles)."""
    return _backend(name).load_public(
        data, insecure_small_keys_for_tests=insecure_small_keys_for_tests, workers=workers)


__all__ = [
    "BACKENDS",
    "Backend",
    "CKKSArray",
    "CKKSConfig",
    "CKKSPublicContext",
    "CKKSSecretContext",
    "DepthExceededError",
    "EncryptedArray",
    "FixedPointArray",
    "PaillierArray",
    "PaillierConfig",
    "PaillierPublicContext",
    "PaillierSecretContext",
    "PublicContext",
    "SecretContext",
    "load_public_context",
    "make_config",
    "make_he",
]
