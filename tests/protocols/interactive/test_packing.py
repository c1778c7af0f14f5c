"""The packed layout's index algebra, on clear slot vectors (no encryption)."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import InputError
from protocols.interactive.packing import (make_plan, pack_output, read_lanes, simulate, unpack_output,
                                           zero_sum_lanes)

SHAPES = [(128, 100, 50), (100, 128, 50), (100, 50, 128), (7, 3, 5), (1, 1, 1), (40, 3, 2),
          (5, 100, 7), (3, 9, 70)]


@pytest.mark.parametrize("slots", [16, 64, 4096])
@pytest.mark.parametrize("shape", SHAPES)
def test_packed_evaluation_is_the_matrix_product(slots: int, shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(shape) + slots)
    x, m = rng.normal(size=shape[:2]), rng.normal(size=shape[1:])
    plan = make_plan(slots, *shape)

    assert np.allclose(simulate(x, m, plan), x @ m, atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES)
def test_output_packing_round_trips_and_zero_sum_noise_vanishes(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(0)
    plan = make_plan(256, *shape)
    y = rng.normal(size=(shape[0], shape[2]))
    noise = rng.normal(size=(plan.n_outputs, plan.slots))

    assert np.array_equal(unpack_output(pack_output(y, plan), plan), y)
    assert np.allclose(unpack_output(zero_sum_lanes(plan, noise), plan), 0.0, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_read_lanes_are_exactly_those_unpack_output_reads(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(1)
    plan = make_plan(256, *shape)
    read = read_lanes(plan)
    lanes = rng.normal(size=read.shape) + 1j * rng.normal(size=read.shape)
    junk = rng.normal(size=read.shape) * (read.real == 0) + 1j * rng.normal(size=read.shape) * (read.imag == 0)

    # junk in the other lanes changes nothing; every read part is used (fold copies included)
    assert np.array_equal(unpack_output(lanes + junk, plan), unpack_output(lanes, plan))
    assert (read.real != 0).sum() + (read.imag != 0).sum() == shape[0] * shape[2] * plan.fold


def test_breast_sized_plans_use_two_ciphertexts_and_few_rotations() -> None:
    forward, weight, inputs = (make_plan(4096, 128, 100, 50), make_plan(4096, 100, 128, 50),
                               make_plan(4096, 100, 50, 128))

    for plan in (forward, weight, inputs):
        assert (plan.n_inputs, plan.n_outputs, plan.rotations()) == (2, 2, 28)
    assert (forward.pair, inputs.pair) == ("rows", "outputs")


@pytest.mark.parametrize("args", [(4096, 0, 1, 1), (4096, 1, -1, 1), (100, 1, 1, 1), (4096, 1.5, 1, 1),
                                  (4096, True, 1, 1)])
def test_bad_plan_arguments(args: tuple) -> None:
    with pytest.raises(InputError):
        make_plan(*args)


def test_shape_mismatch_is_refused() -> None:
    plan = make_plan(64, 4, 3, 2)
    with pytest.raises(InputError, match="shape"):
        simulate(np.zeros((4, 2)), np.zeros((2, 2)), plan)
    with pytest.raises(InputError, match="lanes"):
        unpack_output(np.zeros((1, 32)), plan)
