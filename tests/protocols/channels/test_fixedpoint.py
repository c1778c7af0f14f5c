"""Fixed-point encoding in Z_2^64: round trips, wrapping sums, and the overflow check."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.channels import fixedpoint
from protocols.errors import EncodingOverflowError, InputError


def test_known_answers():
    encoded = fixedpoint.encode(np.array([1.0, -1.0, 0.5, 0.0]), scale_bits=4, n_summands=1)

    np.testing.assert_array_equal(encoded, np.array([16, 2**64 - 16, 8, 0], dtype=np.uint64))
    np.testing.assert_array_equal(fixedpoint.decode(encoded, scale_bits=4), [1.0, -1.0, 0.5, 0.0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40), st.integers(0, 30))
def test_round_trip_error_is_at_most_half_a_step(values, scale_bits):
    array = np.array(values)

    decoded = fixedpoint.decode(fixedpoint.encode(array, scale_bits=scale_bits, n_summands=1),
                                scale_bits=scale_bits)

    assert np.max(np.abs(decoded - array)) <= 0.5 * fixedpoint.resolution(scale_bits)


def test_sum_of_encodings_wraps_to_the_sum_of_values():
    rng = np.random.default_rng(3)
    rows = rng.normal(scale=100, size=(7, 50))
    encoded = [fixedpoint.encode(r, scale_bits=20, n_summands=7) for r in rows]

    total = np.zeros(50, dtype=np.uint64)
    for e in encoded:
        total += e  # wraps mod 2^64 for negative values

    np.testing.assert_allclose(fixedpoint.decode(total, scale_bits=20), rows.sum(axis=0),
                               atol=7 * fixedpoint.resolution(20))


def test_overflow_names_the_parameters():
    with pytest.raises(EncodingOverflowError, match="scale_bits=24.*n_summands=10"):
        fixedpoint.encode(np.array([0.0, 1e12]), scale_bits=24, n_summands=10)


def test_largest_allowed_value_fits_and_the_next_does_not():
    limit = fixedpoint.max_abs_value(16, 8)
    encoded = fixedpoint.encode(np.array([limit, -limit]), scale_bits=16, n_summands=8)

    total = encoded * np.uint64(8)  # the sum of 8 clients all at the limit

    assert np.all(np.sign(fixedpoint.decode(total, scale_bits=16)) == [1, -1])
    with pytest.raises(EncodingOverflowError):
        fixedpoint.encode(np.array([limit * 1.001]), scale_bits=16, n_summands=8)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused(bad):
    with pytest.raises(EncodingOverflowError, match="non-finite"):
        fixedpoint.encode(np.array([1.0, bad]), scale_bits=8, n_summands=1)


@pytest.mark.parametrize("kwargs", [{"scale_bits": -1, "n_summands": 1}, {"scale_bits": 53, "n_summands": 1},
                                    {"scale_bits": 8, "n_summands": 0}, {"scale_bits": 8.0, "n_summands": 1}])
def test_bad_parameters_are_input_errors(kwargs):
    with pytest.raises(InputError):
        fixedpoint.encode(np.zeros(3), **kwargs)


def test_decode_needs_uint64():
    with pytest.raises(InputError):
        fixedpoint.decode(np.zeros(3, dtype=np.int64), scale_bits=8)
