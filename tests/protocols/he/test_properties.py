"""Homomorphism properties on random small inputs (few examples: keys are slow)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from .conftest import Scheme

_SETTINGS = settings(max_examples=6, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
_VALUES = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
_SHAPES = st.tuples(st.integers(1, 9), st.integers(1, 4))


@st.composite
def _pair(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    shape = draw(_SHAPES)
    return draw(arrays(np.float64, shape, elements=_VALUES)), draw(arrays(np.float64, shape, elements=_VALUES))


@_SETTINGS
@given(pair=_pair())
def test_addition_is_homomorphic(scheme: Scheme, pair: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = pair

    out = scheme.secret.decrypt(scheme.public.encrypt(x) + scheme.public.encrypt(y))

    assert scheme.close(out, x + y)


@_SETTINGS
@given(pair=_pair(), factor=st.floats(-8, 8, allow_nan=False))
def test_plain_multiplication_is_homomorphic(scheme: Scheme, pair: tuple[np.ndarray, np.ndarray],
                                             factor: float) -> None:
    x, y = pair
    row = y[0] / 8.0

    out = scheme.secret.decrypt(scheme.public.encrypt(x) * row * factor)

    assert scheme.close(out, x * row * factor)


@_SETTINGS
@given(data=st.data())
def test_matmul_is_homomorphic(scheme: Scheme, data: st.DataObject) -> None:
    batch, d_in, d_out = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))
    x = data.draw(arrays(np.float64, (batch, d_in), elements=_VALUES))
    w = data.draw(arrays(np.float64, (d_in, d_out), elements=st.floats(-4, 4, allow_nan=False)))

    out = scheme.secret.decrypt(scheme.public.encrypt(x) @ w)

    assert scheme.close(out, x @ w)
