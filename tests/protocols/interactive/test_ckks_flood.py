"""What the key owner decrypts from a packed CKKS output: the whole polynomial, flooded.

The key owner holds the secret key, so it reads every coefficient of the decrypted
plaintext, not only the decoded slots. These tests read those coefficients from the
fields the evaluator sends and subtract the product itself (decrypted from the
evaluator's ciphertexts, which only a test can see): what is left is what the
evaluator added. Its low bits must be uniform, or they leave the exact product's
low bits to the key owner.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from tenseal import sealapi

from protocols.interactive.ckks_engine import PackedCKKSKey, PackedKeyOwner, SealHandles
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.ckks_helper import input_grad_fields
from protocols.interactive.packing import make_plan, read_lanes
from protocols.interactive.sealwire import ciphertexts_from_fields

BREAST = (128, 100, 50)  # HE-VFL's batch and interactive widths on breast (give_credit: 25 and 25)
FORWARD_AND_WEIGHT = [BREAST, (100, 128, 50), (128, 25, 25), (25, 128, 25)]
"""(rows, contraction, outputs) of the masked products: a @ W~ and a.T @ dz at breast and credit sizes."""
INPUT_GRAD = [(100, 50, 128), (25, 25, 128)]
"""Those of the revealed one, eps_acc @ -dz.T: coefficients up to ~2^83, rounded in steps of up to 2^31."""


def _coefficients(seal: SealHandles, plain: Any) -> list[int]:
    """Signed coefficients of an NTT-form plaintext at the top level, by SEAL's own inverse NTT.

    Adding the plaintext to an encryption of zero and taking both out of NTT form leaves
    the plaintext's residues as their difference in the first polynomial.
    """
    base, summed = seal.zero(), sealapi.Ciphertext()
    plain.scale = base.scale
    seal.evaluator.add_plain(base, plain, summed)
    for ct in (base, summed):
        seal.evaluator.transform_from_ntt_inplace(ct)
    n = base.poly_modulus_degree()
    primes = [p.value() for p in seal.context.get_context_data(base.parms_id()).parms().coeff_modulus()]
    modulus = math.prod(primes)
    a, b = summed.dyn_array(), base.dyn_array()
    out = [0] * n
    for i, p in enumerate(primes):
        lift = (modulus // p) * pow(modulus // p, -1, p)
        for j in range(n):
            out[j] += (a[i * n + j] - b[i * n + j]) % p * lift
    return [c % modulus - modulus if c % modulus > modulus // 2 else c % modulus for c in out]


def _added(key: PackedCKKSKey, owner: PackedKeyOwner, fields: dict, outs: list, n: int) -> list[int]:
    """Coefficients of (decrypted output - decrypted product): the evaluator's additions."""
    _, _, _, decryptor = key._sealapi()
    body = {k: v for k, v in fields.items() if k != "unscale_bits"}
    added: list[int] = []
    for sent, product in zip(ciphertexts_from_fields(owner.seal.public, body, n), outs):
        plains = [sealapi.Plaintext(), sealapi.Plaintext()]
        decryptor.decrypt(sent, plains[0])
        decryptor.decrypt(product, plains[1])
        mine, theirs = (_coefficients(owner.seal, p) for p in plains)
        added += [a - b for a, b in zip(mine, theirs)]
    return added


def _near_zero(coefficients: list[int], bits: int) -> float:
    """Share of coefficients within 2^(bits - 7) of a multiple of 2^bits (uniform: 1/64)."""
    m = 1 << bits
    return float(np.mean([abs((c + m // 2) % m - m // 2) < m >> 7 for c in coefficients]))


@pytest.fixture(scope="module")
def parties() -> tuple[PackedCKKSKey, PackedKeyOwner, PackedEvaluator]:
    key = PackedCKKSKey.generate_packed()
    return key, PackedKeyOwner(key), PackedEvaluator(key.public_context())


def _product(parties: tuple, shape: tuple[int, int, int], seed: int) -> tuple[Any, np.ndarray, np.ndarray, list, int]:
    _, owner, evaluator = parties
    rows, n_in, n_out = shape
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(-1, 1, (rows, n_in)), rng.normal(0, 0.1, (n_in, n_out))
    plan = make_plan(evaluator.seal.slots, rows, n_in, n_out)
    outs, exponent = evaluator.product(evaluator.load(owner.encrypt(x, plan, 1.0), plan), w, plan)
    return plan, x, w, outs, exponent


@pytest.mark.parametrize("shape", FORWARD_AND_WEIGHT, ids=str)
def test_a_mask_is_uniform_in_every_bit_the_key_owner_decrypts(parties: tuple, shape: tuple) -> None:
    # Arrange
    key, owner, evaluator = parties
    plan, x, w, outs, exponent = _product(parties, shape, seed=1)

    # Act
    fields, mask = evaluator.masked(outs, plan, exponent, 1.0)
    added = _added(key, owner, fields, outs, plan.n_outputs)

    # Assert: the mask leaves no low bits to the product (all were within 2^33 of 0 mod 2^40 before)
    for bits in (16, 32, 40, 48):
        assert _near_zero(added, bits) < 0.03, bits
    np.testing.assert_allclose(owner.decrypt(fields, plan) - mask, x @ w, atol=1e-6)


@pytest.mark.parametrize("shape", INPUT_GRAD, ids=str)
def test_a_revealed_sum_has_no_zero_low_bits_and_keeps_its_precision(parties: tuple, shape: tuple) -> None:
    # Arrange
    key, owner, evaluator = parties
    plan, x, w, outs, exponent = _product(parties, shape, seed=2)
    clear = np.random.default_rng(3).normal(0, 1, (shape[0], shape[2]))

    # Act
    fields = evaluator.revealed(outs, plan, exponent, 1.0, clear)
    added = _added(key, owner, fields, outs, plan.n_outputs)

    # Assert: below the clear term's rounding step the bits are uniform
    # (before flooding, all coefficients were within 2^17 of 0 mod 2^24 at breast sizes)
    for bits in (16, 24):
        assert _near_zero(added, bits) < 0.03, bits
    np.testing.assert_allclose(owner.decrypt(fields, plan), x @ w + clear, atol=1e-6)


class KeyOwnerProbe:
    """The key owner attacking a revealed product X @ M + clear (the input gradient: X its own
    noise, M = -dz.T the active party's): it runs the product itself on its own ciphertexts
    (it holds the public context) for a basis of M, and fits what it decrypted."""

    def __init__(self, parties: tuple, shape: tuple[int, int, int], seed: int) -> None:
        self.key, self.owner, self.evaluator = parties
        self.mine = PackedEvaluator(self.key.public_context())
        rows, n, outputs = shape
        self.rng = np.random.default_rng(seed)
        self.plan = make_plan(self.evaluator.seal.slots, rows, n, outputs)
        self.x = self.rng.uniform(-1, 1, (rows, n))
        self.fields = self.owner.encrypt(self.x, self.plan, 1.0)
        self.m_shape, self.clear_shape = (n, outputs), (rows, outputs)

    def lanes(self, party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> tuple[dict, np.ndarray]:
        """The sent fields and every lane the key owner can decode from them."""
        outs, k = party.product(party.load(self.fields, self.plan), m, self.plan)
        sent = party.revealed(outs, self.plan, k, 1.0, clear)
        body = {name: value for name, value in sent.items() if name != "unscale_bits"}
        cts = ciphertexts_from_fields(self.owner.seal.public, body, self.plan.n_outputs)
        return sent, self.key.decrypt_slots(cts) * 2.0 ** sent["unscale_bits"]

    def basis(self, read: Any) -> np.ndarray:
        """Columns ``read(M = e_i) - read(M = 0)`` from the key owner's own runs: the linear map M -> read."""
        zero_m, zero_clear = np.zeros(self.m_shape), np.zeros(self.clear_shape)
        origin = read(self.mine, zero_m, zero_clear)
        units = np.eye(zero_m.size).reshape(-1, *self.m_shape)
        return np.array([read(self.mine, unit, zero_clear) - origin for unit in units]).T


def test_the_key_owner_cannot_solve_for_the_evaluators_matrix_from_the_lanes_it_does_not_read(parties: tuple) -> None:
    """Where Y is 0 (padding), a revealed output held the CKKS error alone: linear in M, with
    coefficients the key owner's own runs give (its input's rotation noise). Before the
    guard, least squares recovered M (so dz) to a relative error of 2e-6."""
    # Arrange
    probe = KeyOwnerProbe(parties, (6, 4, 8), seed=4)
    read = read_lanes(probe.plan)
    unread = np.concatenate([(read.real == 0).ravel(), (read.imag == 0).ravel()])

    def padding(party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> np.ndarray:
        lanes = probe.lanes(party, m, clear)[1]
        return np.concatenate([lanes.real.ravel(), lanes.imag.ravel()])[unread]

    secret = probe.rng.normal(0, 0.3, probe.m_shape)
    seen = padding(probe.evaluator, secret, probe.rng.normal(0, 1, probe.clear_shape))

    # Act
    origin = padding(probe.mine, np.zeros(probe.m_shape), np.zeros(probe.clear_shape))
    solved = np.linalg.lstsq(probe.basis(padding), seen - origin, rcond=None)[0].reshape(probe.m_shape)

    # Assert: no better than knowing nothing; the lanes are guarded, not an error of ~1e-10
    assert np.linalg.norm(solved - secret) / np.linalg.norm(secret) > 0.5
    assert np.median(np.abs(seen)) > 0.01


def test_the_linear_attack_fails_on_the_lanes_the_key_owner_reads(parties: tuple) -> None:
    """A measurement, not a guarantee: there it reads O = W dz.T + err(dz) (W = W~ - X, unknown).
    It factors O at rank n, leaving dz = dz0 A for an unknown A, and fits A so that err(-(dz0 A).T),
    predicted by its own runs, explains what lies outside that rank. The error there is dominated
    by the rounding of M's encoded diagonals, a pseudo-random function of M that its runs cannot
    predict, and the fit recovered nothing (relative error 0.74-1.23 over four draws) even before
    the rotation noise was re-randomised (also with probes at a finer plaintext scale)."""
    # Arrange
    probe = KeyOwnerProbe(parties, (8, 2, 12), seed=5)
    rows, n = probe.x.shape
    dz, w = probe.rng.normal(0, 0.3, (12, n)), probe.rng.normal(0, 0.3, (rows, n))

    def reads(party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> np.ndarray:
        sent = probe.lanes(party, m, clear)[0]
        return (probe.owner.decrypt(sent, probe.plan) - probe.x @ m - clear).ravel()  # err(M), as it knows X

    observed = probe.owner.decrypt(probe.lanes(probe.evaluator, -dz.T, (w + probe.x) @ dz.T)[0], probe.plan)
    err_of = probe.basis(reads)  # the key owner's prediction of err(M), from its own runs

    def recover(o: np.ndarray) -> np.ndarray:
        """Rank-n factors of o, then A from the part outside them."""
        u, sv, vt = np.linalg.svd(o)
        dz0 = vt[:n].T * np.sqrt(sv[:n])
        left, right = np.eye(rows) - u[:, :n] @ u[:, :n].T, np.eye(dz.shape[0]) - vt[:n].T @ vt[:n]
        outside = lambda v: (left @ v.reshape(rows, -1) @ right).ravel()  # noqa: E731
        fit = np.array([outside(err_of @ (-(dz0 @ a).T).ravel()) for a in np.eye(n * n).reshape(-1, n, n)]).T
        return dz0 @ np.linalg.lstsq(fit, outside(o), rcond=None)[0].reshape(n, n)

    # Act
    found = recover(observed)
    if_predictable = recover(w @ dz.T + (err_of @ (-dz.T).ravel()).reshape(rows, -1))

    # Assert: the attack works where the error is what the key owner predicts, and not here
    assert np.linalg.norm(if_predictable - dz) / np.linalg.norm(dz) < 1e-3
    assert np.linalg.norm(found - dz) / np.linalg.norm(dz) > 0.3


def test_the_key_owner_cannot_reproduce_the_rotation_noise_of_the_input_gradient(parties: tuple) -> None:
    """Run on its own ciphertexts, the product's key switches add noise the key owner can compute;
    the evaluator re-randomises them first, so even knowing M and the clear term (as a test
    does) the key owner's own run no longer reproduces what it decrypts (1e-15 before)."""
    # Arrange
    key, owner, evaluator = parties
    mine = PackedEvaluator(key.public_context())
    rows, n, outputs = 6, 4, 8
    rng = np.random.default_rng(6)
    plan = make_plan(evaluator.seal.slots, rows, n, outputs)
    x = rng.uniform(-1, 1, (rows, n))
    noise = owner.encrypt(x, plan, 1.0)
    dz, w = rng.normal(0, 0.3, (outputs, n)), rng.normal(0, 0.3, (rows, n))

    # Act: the evaluator's input gradient, and the key owner's own run of the same product
    theirs = owner.decrypt(input_grad_fields(evaluator, noise, dz, w), plan)
    outs, k = mine.product(mine.load(noise, plan), -dz.T, plan)
    own = owner.decrypt(mine.revealed(outs, plan, k, 1.0, (dz @ w.T).T), plan)

    # Assert
    assert np.median(np.abs(theirs - own)) > 1e-13
    np.testing.assert_allclose(theirs, (w - x) @ dz.T, atol=1e-6)
