"""Weighted means: a weight too small for the fixed point is refused, not summed to a wrong mean."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.channels import SecAggConfig, weighted_payload
from protocols.errors import InputError

from .helpers import client_inputs, run_round


@pytest.mark.parametrize("secure", [True, False])
def test_a_weight_too_small_for_the_fixed_point_is_refused_naming_the_floor(secure):
    # Arrange: before, 1e-6 gave a masked mean off by 2e-2, and 1e-8 "the summed weight is not positive"
    inputs = client_inputs(3, 4)
    weights = {c: 1e-6 for c in inputs}
    # Act / Assert: masked or not, so a run that works in clear works masked too
    with pytest.raises(InputError, match=r"weight must be at least 0\.000244 .*scale_bits=24.*got 1e-06"):
        run_round(inputs, SecAggConfig(secure=secure), weights=weights)


def test_the_floor_is_2_to_the_12_fixed_point_units_and_at_most_1():
    # Arrange
    x = np.ones(2)
    # Act
    at_floor = weighted_payload(x, 2.0**-12)
    coarse = weighted_payload(x, 1.0, scale_bits=4)  # integer weights are exact at any scale
    # Assert
    assert at_floor[-1] == 2.0**-12 and coarse[-1] == 1.0
    for weight, bits in [(0.99 * 2.0**-12, 24), (0.5, 4)]:
        with pytest.raises(InputError, match="weight must be at least"):
            weighted_payload(x, weight, scale_bits=bits)


def test_at_the_floor_the_masked_mean_keeps_the_documented_error():
    # Arrange
    inputs = client_inputs(3, 50)
    weights = {"c0": 2.0**-12, "c1": 2.0**-12, "c2": 2.0**-11}
    expected = np.average(np.stack(list(inputs.values())), axis=0, weights=list(weights.values()))
    # Act
    mean = run_round(inputs, SecAggConfig(), weights=weights).results["server"]
    # Assert: |error| <= 2^-13 * (1 + |mean|), the bound weighted_payload documents
    assert np.all(np.abs(mean - expected) <= 2.0**-13 * (1 + np.abs(expected)))
