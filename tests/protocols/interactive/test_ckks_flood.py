"""What the key owner can read from packed CKKS outputs beyond what it is meant to.

The key owner holds the secret key, so it reads every coefficient of a decrypted
plaintext and every slot, not only the lanes it is meant to read, and it can run the
evaluator's product itself on its own ciphertexts. The measurements live in
:mod:`benchmarks.key_owner` (which also reports them in ``leakage.md``); these tests
read what the evaluator sends and assert on them. Each failed on the code before the
fix it guards: the flood (low bits), the guard (padding), the re-randomisation
(rotation noise).
"""

from __future__ import annotations

import numpy as np
import pytest

import benchmarks.key_owner as ko

BREAST = (128, 100, 50)  # HE-VFL's batch and interactive widths on breast (give_credit: 25 and 25)
FORWARD_AND_WEIGHT = [BREAST, (100, 128, 50), (128, 25, 25), (25, 128, 25)]
"""(rows, contraction, outputs) of the masked products: a @ W~ and a.T @ dz at breast and credit sizes."""
INPUT_GRAD = [(100, 50, 128), (25, 25, 128)]
"""Those of the revealed one, eps_acc @ -dz.T: coefficients up to ~2^83, rounded in steps of up to 2^31."""


@pytest.fixture(scope="module")
def parties() -> ko.Parties:
    return ko.parties()


@pytest.mark.parametrize("shape", FORWARD_AND_WEIGHT, ids=str)
def test_a_mask_is_uniform_in_every_bit_the_key_owner_decrypts(parties: ko.Parties, shape: tuple) -> None:
    # Arrange
    _, owner, evaluator = parties
    plan, x, w, outs, exponent = ko.product(parties, shape, seed=1)

    # Act
    fields, mask = evaluator.masked(outs, plan, exponent, 1.0)
    added = ko.added(parties, fields, outs, plan.n_outputs)

    # Assert: the mask leaves no low bits to the product (all were within 2^33 of 0 mod 2^40 before)
    for bits in (16, 32, 40, 48):
        assert ko.near_zero(added, bits) < 0.03, bits
    np.testing.assert_allclose(owner.decrypt(fields, plan) - mask, x @ w, atol=1e-6)


@pytest.mark.parametrize("shape", INPUT_GRAD, ids=str)
def test_a_revealed_sum_has_no_zero_low_bits_and_keeps_its_precision(parties: ko.Parties, shape: tuple) -> None:
    # Arrange
    _, owner, evaluator = parties
    plan, x, w, outs, exponent = ko.product(parties, shape, seed=2)
    clear = np.random.default_rng(3).normal(0, 1, (shape[0], shape[2]))

    # Act
    fields = evaluator.revealed(outs, plan, exponent, 1.0, clear)
    added = ko.added(parties, fields, outs, plan.n_outputs)

    # Assert: below the clear term's rounding step the bits are uniform
    # (before flooding, all coefficients were within 2^17 of 0 mod 2^24 at breast sizes)
    for bits in (16, 24):
        assert ko.near_zero(added, bits) < 0.03, bits
    np.testing.assert_allclose(owner.decrypt(fields, plan), x @ w + clear, atol=1e-6)


def test_the_key_owner_cannot_solve_for_dz_from_the_lanes_it_does_not_read(parties: ko.Parties) -> None:
    """Where Y is 0 (padding), a revealed output held the CKKS error alone: linear in M, with
    coefficients the key owner's own runs give. Before the guard, least squares recovered dz
    to a relative error of 2e-6 here."""
    # Act
    result = ko.padding_attack(parties, (6, 4, 8), seed=4)

    # Assert: no better than knowing nothing; the lanes are guarded, not an error of ~1e-10
    assert result["dz_error"] > 0.5
    assert result["padding_median"] > 0.01


def test_the_linear_attack_fails_on_the_lanes_the_key_owner_reads(parties: ko.Parties) -> None:
    """A measurement, not a guarantee: there it reads O = W dz.T + err(dz), W unknown. The error
    is dominated by the rounding of M's encoded diagonals, a pseudo-random function of M that
    its runs cannot predict; the fit recovered nothing (0.74-1.23 over four draws) even before
    the rotation noise was re-randomised, and also with probes at a finer plaintext scale."""
    # Act
    result = ko.read_lane_attack(parties, (8, 2, 12), seed=5)

    # Assert: the fit works where the error is the predicted one, and not on what was sent
    assert result["dz_error_if_predictable"] < 1e-3
    assert result["dz_error"] > 0.3


def test_the_key_owner_cannot_reproduce_the_rotation_noise_of_the_input_gradient(parties: ko.Parties) -> None:
    """On its own ciphertexts, the product's key switches add noise the key owner can compute;
    the evaluator re-randomises them first, so even knowing M and the clear term its own run
    no longer reproduces what it decrypts (a median gap of 1e-15 before)."""
    # Act
    result = ko.rotation_noise(parties, (6, 4, 8), seed=6)

    # Assert
    assert result["median_gap"] > 1e-13
    assert result["max_error"] < 1e-6
