"""benchmarks.stats: one value has no spread, in every summary and every cell."""

import math

import pytest

from benchmarks.stats import ci95_half_width, error_bar, mean_std, sample_std


def test_sample_std_uses_n_minus_one():
    assert sample_std([1.0, 2.0, 3.0]) == pytest.approx(1.0)


def test_sample_std_of_one_value_is_nan_not_zero():
    assert math.isnan(sample_std([0.9]))


def test_ci95_half_width_matches_the_t_table():
    # t(0.975, 4) = 2.7764; std 1 over 5 values
    assert ci95_half_width(1.0, 5) == pytest.approx(2.7764 / math.sqrt(5), rel=1e-4)


@pytest.mark.parametrize("std, n", [(1.0, 1), (None, 3)])
def test_ci95_half_width_is_nan_without_a_spread(std, n):
    assert math.isnan(ci95_half_width(std, n))


def test_mean_std_cell_with_spread():
    assert mean_std(0.91234, 0.0123, 5, digits=2, scale=100) == "91.23 ± 1.23 (n=5)"
    assert mean_std(91.234, 1.23, 5, digits=2, count=False) == "91.23 ± 1.23"


@pytest.mark.parametrize("std", [math.nan, None, 0.0])
def test_mean_std_cell_of_one_value_has_no_spread(std):
    # 0.0 is what files written before the nan rule stored for one value: the count decides
    assert mean_std(0.5, std, 1, digits=4) == "0.5000 (n=1)"


@pytest.mark.parametrize("std, bar", [(0.2, 0.2), (math.nan, 0.0), (None, 0.0)])
def test_error_bar_draws_nothing_for_one_value(std, bar):
    assert error_bar(std) == bar
