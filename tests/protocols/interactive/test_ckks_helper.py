"""The packed evaluator's helper process and its pieces, decrypted by the key owner."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from protocols.errors import DecodeError, InputError, ProtocolError
from protocols.interactive.ckks_engine import PackedCKKSKey, PackedKeyOwner
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.ckks_helper import EvaluatorHelper
from protocols.interactive.packing import make_plan
from protocols.interactive.sealwire import (ciphertext_bytes, ciphertext_from_bytes, ciphertexts_fields,
                                           ciphertexts_from_fields)


@pytest.fixture(scope="module")
def key() -> PackedCKKSKey:
    return PackedCKKSKey.generate_packed()


def _inputs(key: PackedCKKSKey, rows: int = 70, n: int = 100, m: int = 6):
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, size=(rows, n)), rng.normal(size=(n, m)) * 0.1
    plan = make_plan(key.public_context().config.slots, rows, n, m)
    return x, w, plan, PackedKeyOwner(key).encrypt(x, plan, 1.0)


def test_an_encryption_from_a_spare_zero_decrypts_like_a_fresh_one(key: PackedCKKSKey) -> None:
    evaluator = PackedEvaluator(key.public_context())
    values = np.arange(8, dtype=np.complex128) - 3.5j
    zero = evaluator.seal.zero()

    ct = evaluator.seal.encrypt(values, 2.0 ** 40, zero)

    assert np.allclose(key.decrypt_slots([ct])[0][:8] * 2.0 ** 40 / ct.scale, values, atol=1e-6)


def test_the_key_owners_ciphertexts_travel_seeded_at_half_the_bytes(key: PackedCKKSKey) -> None:
    # Arrange
    x, w, plan, fields = _inputs(key)
    full = len(ciphertext_bytes(key.encrypt_slots(np.zeros((1, plan.slots)), 2.0 ** 50)[0]))
    # Act: the evaluator loads them as full ciphertexts and computes on them
    evaluator, owner = PackedEvaluator(key.public_context()), PackedKeyOwner(key)
    outs, exponent = evaluator.product(evaluator.load(fields, plan), w, plan)
    masked, mask = evaluator.masked(outs, plan, exponent, 1.0)
    # Assert: c1 travels as its seed, and the product is still right
    assert len(fields["tensor"]) < 0.55 * full * plan.n_inputs
    assert np.allclose(owner.decrypt(masked, plan) - mask, x @ w, atol=1e-6)


def test_a_diagonal_too_small_for_the_plaintext_scale_counts_as_zero(key: PackedCKKSKey) -> None:
    # Arrange: one diagonal holds only 1e-13 of max |M| (a saturated sigmoid's gradient), which
    # encodes to the zero plaintext that SEAL refuses to multiply by ("transparent" result)
    evaluator, owner = PackedEvaluator(key.public_context()), PackedKeyOwner(key)
    x, m = np.random.default_rng(1).uniform(-1, 1, size=(8, 4)), np.zeros((4, 3))
    m[0, 0], m[2, 1] = 1.0, 1e-13
    plan = make_plan(evaluator.seal.slots, 8, 4, 3)
    # Act
    outs, exponent = evaluator.product(evaluator.load(owner.encrypt(x, plan, 1.0), plan), m, plan)
    fields, mask = evaluator.masked(outs, plan, exponent, 1.0)
    # Assert
    assert np.allclose(owner.decrypt(fields, plan) - mask, x @ m, atol=1e-7, rtol=0)


@pytest.mark.parametrize("start", [1, 2, 3])  # 3 giant steps: a rotation by no power of two
def test_partial_products_joined_equal_the_whole_product(key: PackedCKKSKey, start: int) -> None:
    # Arrange: the public context holds keys for left power-of-two rotations only
    x, w, plan, fields = _inputs(key)
    evaluator, owner = PackedEvaluator(key.public_context()), PackedKeyOwner(key)
    cts = evaluator.load(fields, plan)
    assert plan.giant == 4
    # Act
    first, exponent = evaluator.product(cts, w, plan, range(start))
    second, _ = evaluator.product(cts, w, plan, range(start, plan.giant))
    joined = evaluator.join(first, second, plan, start)
    reply, mask = evaluator.masked(joined, plan, exponent, 1.0)
    # Assert
    assert np.allclose(owner.decrypt(reply, plan) - mask, x @ w, atol=1e-6)


def test_the_helper_shares_a_product_and_hands_over_spare_zeros(key: PackedCKKSKey) -> None:
    x, w, plan, fields = _inputs(key)
    evaluator, owner = PackedEvaluator(key.public_context()), PackedKeyOwner(key)
    helper = EvaluatorHelper(key.public_context(), mask_bits=16)
    try:
        half = plan.giant // 2
        _, pending = helper.partial(fields, w, plan, range(half, plan.giant), spare=3)
        mine, exponent = evaluator.product(evaluator.load(fields, plan), w, plan, range(half))
        blobs, zeros = pending()
        theirs = [ciphertext_from_bytes(key.public_context(), b) for b in blobs]
        evaluator.zeros = [ciphertext_from_bytes(key.public_context(), b) for b in zeros]
        reply, mask = evaluator.masked(evaluator.join(mine, theirs, plan, half), plan, exponent, 1.0)
    finally:
        helper.close()

    assert len(zeros) <= 3 and len(evaluator.zeros) == max(0, len(zeros) - plan.n_outputs)
    assert np.allclose(owner.decrypt(reply, plan) - mask, x @ w, atol=1e-6)


def test_baby_steps_from_the_helper_stand_in_for_the_callers_own_rotations(key: PackedCKKSKey) -> None:
    x, w, plan, fields = _inputs(key)
    evaluator, owner, public = PackedEvaluator(key.public_context()), PackedKeyOwner(key), key.public_context()
    helper = EvaluatorHelper(public, mask_bits=16)
    try:
        half = plan.giant // 2
        steps, pending = helper.partial(fields, w, plan, range(half, plan.giant))
        cts = evaluator.load(fields, plan)
        baby = [[ct, *(ciphertext_from_bytes(public, b) for b in blobs)] for ct, blobs in zip(cts, steps())]
        mine, exponent = evaluator.product(cts, w, plan, range(half), baby=baby)
        theirs = [ciphertext_from_bytes(public, b) for b in pending()[0]]
        reply, mask = evaluator.masked(evaluator.join(mine, theirs, plan, half), plan, exponent, 1.0)
    finally:
        helper.close()

    assert [len(steps) for steps in baby] == [plan.baby] * plan.n_inputs
    assert np.allclose(owner.decrypt(reply, plan) - mask, x @ w, atol=1e-6)


def test_a_product_refuses_baby_steps_of_the_wrong_shape(key: PackedCKKSKey) -> None:
    _, w, plan, fields = _inputs(key)
    evaluator = PackedEvaluator(key.public_context())
    cts = evaluator.load(fields, plan)

    with pytest.raises(InputError, match="baby steps"):
        evaluator.product(cts, w, plan, baby=[[ct] for ct in cts])


def test_a_partial_job_that_fails_owes_no_further_replies(key: PackedCKKSKey) -> None:
    x, w, plan, fields = _inputs(key)
    helper = EvaluatorHelper(key.public_context(), mask_bits=16)
    try:
        steps, pending = helper.partial({**fields, "key_id": "0" * 32}, w, plan, range(plan.giant))
        with pytest.raises(DecodeError):
            steps()
        with pytest.raises(ProtocolError, match="no job"):
            pending()
        blobs, _ = helper.partial(fields, w, plan, range(plan.giant))[1]()  # the helper is free again
    finally:
        helper.close()

    assert len(blobs) == plan.n_outputs


def test_prepared_plaintexts_are_used_for_their_version_only(key: PackedCKKSKey) -> None:
    x, w, plan, fields = _inputs(key)
    other = w[::-1].copy()
    evaluator, owner = PackedEvaluator(key.public_context()), PackedKeyOwner(key)
    helper = EvaluatorHelper(key.public_context(), mask_bits=16)
    groups = range(plan.giant)

    def product(m: np.ndarray, version: int | None) -> np.ndarray:
        blobs, _ = helper.partial(fields, m, plan, groups, version=version)[1]()
        outs = [ciphertext_from_bytes(key.public_context(), b) for b in blobs]
        exponent = evaluator.plaintexts(m, plan, range(0))[1]
        reply, mask = evaluator.masked(outs, plan, exponent, 1.0)
        return owner.decrypt(reply, plan) - mask

    try:
        helper.prepare(7, w, replace(plan, rows=1), groups)  # encoded ahead, for any row count
        same = product(w, 7)
        stale = product(other, None)  # no version: the matrix sent is encoded afresh
        trusted = product(other, 7)  # the version is the caller's word that the matrix is unchanged
        helper.prepare(8, w, plan, range(1))  # other groups: not reused for all of them
        regrouped = product(other, 8)
    finally:
        helper.close()

    assert np.allclose(same, x @ w, atol=1e-6)
    assert np.allclose(stale, x @ other, atol=1e-6)
    assert np.allclose(trusted, x @ w, atol=1e-6)
    assert np.allclose(regrouped, x @ other, atol=1e-6)


def test_helper_errors_reach_the_caller_as_ours_and_a_closed_helper_refuses_work(key: PackedCKKSKey) -> None:
    _, w, plan, fields = _inputs(key)
    helper = EvaluatorHelper(key.public_context(), mask_bits=16)
    bad = {**fields, "key_id": "0" * 32}

    with pytest.raises(DecodeError):
        helper.partial(bad, w, plan, range(plan.giant))[1]()
    helper.close()
    helper.close()
    with pytest.raises(ProtocolError, match="stopped"):
        helper.partial(fields, w, plan, range(plan.giant))[1]()


def test_serialised_ciphertexts_round_trip_and_garbage_is_refused(key: PackedCKKSKey) -> None:
    evaluator = PackedEvaluator(key.public_context())
    ct = evaluator.seal.zero()

    again = ciphertext_from_bytes(key.public_context(), ciphertext_bytes(ct))

    assert ciphertext_bytes(again) == ciphertext_bytes(ct)
    with pytest.raises(DecodeError):
        ciphertext_from_bytes(key.public_context(), b"not a ciphertext")


def test_packed_fields_with_a_ciphertext_below_the_top_level_are_refused(key: PackedCKKSKey) -> None:
    # CKKSArray checks every ciphertext's level, not only the first's: a lower one after it
    # would reach SEAL's plaintext product as an untyped parameter mismatch
    evaluator = PackedEvaluator(key.public_context())
    top, low = evaluator.seal.zero(), evaluator.seal.zero()
    evaluator.seal.evaluator.mod_switch_to_next_inplace(low)
    fields = ciphertexts_fields(key.public_context(), [top, low], bound_exp=0)

    with pytest.raises(DecodeError, match="level"):
        ciphertexts_from_fields(key.public_context(), fields, 2)


def test_an_engine_forward_is_right_whether_or_not_its_matrix_was_prepared(key: PackedCKKSKey) -> None:
    from protocols.interactive.packed_engines import PackedActive, PackedPassive

    rng = np.random.default_rng(2)
    a, w1 = rng.uniform(-1, 1, size=(130, 100)), rng.normal(size=(100, 6)) * 0.1
    w2 = w1 + rng.normal(size=w1.shape) * 0.01
    passive = PackedPassive(key, 100, 6, 1.0)
    active = PackedActive(key.public_context(), 100, 6, helper=True)
    try:
        active.prepare_forward(w1)
        active.load_input(passive.encrypt_input(a), rows=130)
        prepared = active.unmask(*_reply(passive, *active.forward(w1)))
        stale = active.unmask(*_reply(passive, *active.forward(w2)))  # w changed since prepare_forward
    finally:
        active.close()

    assert np.allclose(prepared, a @ w1, atol=1e-6)
    assert np.allclose(stale, a @ w2, atol=1e-6)


def _reply(passive, fields, mask):
    return mask, passive.open_masked(fields, "forward", np.zeros(mask.shape))
