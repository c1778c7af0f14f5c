"""Shared HE fixtures: keys are made once per session (small Paillier keys, flagged)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from protocols.he import PublicContext, SecretContext, load_public_context, make_he

SMALL_PAILLIER = {"key_bits": 1024, "insecure_small_keys_for_tests": True}


@dataclass(frozen=True)
class Scheme:
    """A key owner, the public context an evaluator loaded, and the expected accuracy."""

    name: str
    secret: SecretContext
    public: PublicContext
    close: Callable[[np.ndarray, np.ndarray], bool]


def _paillier_close(actual: np.ndarray, expected: np.ndarray) -> bool:
    return actual.shape == np.shape(expected) and np.allclose(actual, expected, rtol=1e-6, atol=1e-5)


def _ckks_close(actual: np.ndarray, expected: np.ndarray) -> bool:
    return actual.shape == np.shape(expected) and np.allclose(actual, expected, rtol=1e-3, atol=1e-3)


def _scheme(name: str, close: Callable, **options: object) -> Scheme:
    secret = make_he(name, **options)
    public = load_public_context(name, secret.public_context().serialize(),
                                 insecure_small_keys_for_tests=True)
    return Scheme(name, secret, public, close)


@pytest.fixture(scope="session")
def paillier() -> Scheme:
    return _scheme("paillier", _paillier_close, **SMALL_PAILLIER)


@pytest.fixture(scope="session")
def ckks() -> Scheme:
    return _scheme("ckks", _ckks_close)


@pytest.fixture(scope="session", params=["paillier", "ckks"])
def scheme(request: pytest.FixtureRequest) -> Scheme:
    return request.getfixturevalue(request.param)


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng()
