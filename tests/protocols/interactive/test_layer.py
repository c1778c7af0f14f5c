"""The secure interactive layer against its numpy reference, and its input checks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from protocols.errors import DecodeError, EncodingOverflowError, InputError, ProtocolError
from protocols.interactive import InteractiveConfig

from ..rewriting import Rewriting
from .conftest import CONFIGS, TOLERANCE, Batch, active_role, make_batches, passive_role, reference, run_layer


def test_one_step_matches_numpy(scheme: str) -> None:
    rng = np.random.default_rng(1)
    batches = make_batches(rng, n_in=5, n_out=3, rows=[6], train=[True])
    w0 = rng.normal(size=(5, 3))
    config = CONFIGS[scheme]

    run = run_layer(config, batches, w0)
    active, passive = run.results["active"], run.results["passive"]
    z, da, w = reference(batches, w0, config.lr)
    tol = TOLERANCE[scheme]

    assert np.allclose(active["outputs"][0], z[0], atol=tol, rtol=0)
    assert np.allclose(passive["grads"][0], da[0], atol=tol, rtol=0)
    # the invariant W = W~ - eps_acc, with W~ and eps_acc both far from it
    assert np.allclose(active["masked_weight"] - passive["noise"], w, atol=tol, rtol=0)
    assert np.abs(active["masked_weight"] - w).max() > 0.01
    assert np.abs(passive["noise"]).max() > 0.01


@pytest.mark.parametrize("scheme", ["paillier", "ckks"])
def test_with_both_shares_of_w_the_passive_party_cannot_solve_for_dz(scheme: str) -> None:
    # Arrange: n_in >= n_out, where dL/da = dz @ W.T gives dz away to whoever holds W
    rng = np.random.default_rng(4)
    batches = make_batches(rng, n_in=10, n_out=5, rows=[8, 6], train=[True, True])
    w0, r0 = rng.uniform(-0.3, 0.3, size=(10, 5)), rng.uniform(-0.3, 0.3, size=(10, 5))
    config = CONFIGS[scheme]
    # Act
    shared = run_layer(config, batches, w0, r0=r0)
    alone = run_layer(config, batches, w0 + r0)  # the passive party drew all of W
    # Assert: the layer computes with W = w0 + r0 ...
    z, da, _ = reference(batches, w0 + r0, config.lr)
    tol = TOLERANCE[scheme]
    assert np.allclose(shared.results["active"]["outputs"][0], z[0], atol=tol, rtol=0)
    assert np.allclose(shared.results["passive"]["grads"][0], da[0], atol=tol, rtol=0)
    # ... and the passive party, holding only its share w0, solves for dz no better than guessing,
    # where holding all of W it solved for it exactly
    def solved(grads, w):
        return grads[0] @ np.linalg.pinv(w.T)
    dz = batches[0].dz
    assert np.abs(solved(alone.results["passive"]["grads"], w0 + r0) - dz).max() < 1e-6
    assert np.abs(solved(shared.results["passive"]["grads"], w0) - dz).max() > 0.5 * np.abs(dz).max()


@pytest.mark.parametrize("noise_scale, helper, z_tol, da_tol", [
    (1.0, False, 1e-6, 1e-6),
    (1024.0, False, 1e-3, 1e-5),  # FATE's scale: eps_acc passes the context's limit of 512 by step 2
    (1024.0, True, 1e-3, 1e-5),
], ids=["default noise", "FATE noise", "FATE noise, helper"])
def test_several_steps_and_evaluation_packed_ckks(noise_scale: float, helper: bool, z_tol: float,
                                                   da_tol: float) -> None:
    rng = np.random.default_rng(2)
    batches = make_batches(rng, n_in=9, n_out=4, rows=[16, 16, 7, 11], train=[True, True, True, False])
    w0 = rng.normal(size=(9, 4)) * 0.5
    config = replace(CONFIGS["ckks"], noise_scale=noise_scale, helper=helper)

    run = run_layer(config, batches, w0)
    z, da, w = reference(batches, w0, config.lr)

    # eps_acc goes out scaled into range; z loses digits to a large noise, dL/da and W do not
    assert np.abs(run.results["passive"]["noise"]).max() > (512 if noise_scale > 1 else 0.01)
    for got, want in zip(run.results["active"]["outputs"], z):
        assert np.allclose(got, want, atol=z_tol, rtol=0)
    for got, want in zip(run.results["passive"]["grads"], da):
        assert np.allclose(got, want, atol=da_tol, rtol=0)
    assert np.allclose(run.results["active"]["masked_weight"] - run.results["passive"]["noise"], w,
                       atol=1e-6, rtol=0)


def test_the_helper_process_gives_the_same_training_as_the_caller_alone() -> None:
    # 100 inputs: 64 rows per ciphertext, so 130 rows split their forward product between
    # the caller (1 row block) and the helper (2); 7 rows stay with the caller
    rng = np.random.default_rng(6)
    batches = make_batches(rng, n_in=100, n_out=4, rows=[130, 7, 130], train=[True, True, False])
    w0 = rng.normal(size=(100, 4)) * 0.1
    config = replace(CONFIGS["ckks"], helper=True, activation_bound=8.0, lr=0.05)
    tol = 5e-6  # CKKS error of 100- and 130-term contractions; the caller alone gives the same

    run = run_layer(config, batches, w0)
    z, da, w = reference(batches, w0, config.lr)

    for got, want in zip(run.results["active"]["outputs"], z):
        assert np.allclose(got, want, atol=tol, rtol=0)
    for got, want in zip(run.results["passive"]["grads"], da):
        assert np.allclose(got, want, atol=tol, rtol=0)
    assert np.allclose(run.results["active"]["masked_weight"] - run.results["passive"]["noise"], w,
                       atol=tol, rtol=0)


def test_without_noise_the_active_party_holds_the_true_weights() -> None:
    rng = np.random.default_rng(3)
    batches = make_batches(rng, n_in=4, n_out=2, rows=[5], train=[True])
    w0 = rng.normal(size=(4, 2))
    config = InteractiveConfig(he="paillier", key_bits=512, insecure_small_keys_for_tests=True,
                               noise_scale=0.0)

    run = run_layer(config, batches, w0)

    assert np.allclose(run.results["active"]["masked_weight"], reference(batches, w0, config.lr)[2],
                       atol=1e-7, rtol=0)


@pytest.mark.parametrize("kwargs", [dict(he="rsa"), dict(lr=0.0), dict(lr=float("nan")),
                                    dict(noise_scale=-1.0), dict(activation_bound=0),
                                    dict(mask_bits=0), dict(mask_bits=41), dict(packed=1),
                                    dict(lr=True), dict(helper=1)])
def test_bad_config(kwargs: dict) -> None:
    with pytest.raises(InputError):
        InteractiveConfig(**kwargs)


@pytest.mark.parametrize("he", ["ckks", "paillier"])
@pytest.mark.parametrize(("kwargs", "field"), [(dict(key_bits=1000), "key_bits"),
                                               (dict(precision_bits=-1), "precision_bits"),
                                               (dict(key_bits="2048"), "key_bits")])
def test_paillier_fields_are_checked_whatever_the_scheme(he: str, kwargs: dict, field: str) -> None:
    with pytest.raises(InputError, match=field):
        InteractiveConfig(he=he, **kwargs)


def test_parties_must_agree_on_the_scheme() -> None:
    from protocols.interactive import ActiveInteractive, PassiveInteractive
    from protocols.transport import run_parties

    def passive(t):  # type: ignore[no-untyped-def]
        PassiveInteractive(t, active="active", n_in=3, config=CONFIGS["paillier"]).setup(
            lambda n_out, bound: np.ones((3, n_out)))

    def active(t):  # type: ignore[no-untyped-def]
        ActiveInteractive(t, passive="passive", n_out=2, config=CONFIGS["ckks"]).setup(lambda n_in: 1.0)

    with pytest.raises(ProtocolError, match="expects 'ckks'"):
        run_parties({"passive": passive, "active": active}, timeout=20)


@pytest.mark.parametrize(("n_out", "bound"), [(2**31, 1.0), (10**30, 1.0), (3, 10**400), (3, 1e300)])
def test_a_passive_party_refuses_an_announced_width_or_bound_it_cannot_hold(n_out: int, bound: float) -> None:
    # Arrange: an active party announcing a huge layer or initial-weight bound (a raw torch error,
    # an OverflowError or gigabytes of weights before)
    from protocols.codec import Tag
    from protocols.interactive import PassiveInteractive
    from protocols.transport import run_parties

    def passive(t):  # type: ignore[no-untyped-def]
        PassiveInteractive(t, active="active", n_in=3, config=CONFIGS["paillier"]).setup(
            lambda n, b: np.ones((3, n)))

    def active(t):  # type: ignore[no-untyped-def]
        t.recv("passive", Tag(0, "interactive", "hello"))
        t.send("passive", Tag(0, "interactive", "ready"), n_out=n_out, init_bound=bound)

    # Act / Assert
    with pytest.raises(ProtocolError, match="party 'active' announced an invalid"):
        run_parties({"passive": passive, "active": active}, timeout=20)


def test_the_generic_ckks_engine_refuses_a_mask_weaker_than_mask_bits() -> None:
    # Arrange: its value limit (2^19) leaves about 9 bits above these products, not the default 16
    rng = np.random.default_rng(9)
    batches = make_batches(rng, n_in=5, n_out=3, rows=[6], train=[True])
    config = replace(CONFIGS["ckks-generic"], mask_bits=16)
    # Act / Assert: a clear error, where masks used to shrink silently to what fitted
    with pytest.raises(EncodingOverflowError, match="mask_bits=16 bits; lower mask_bits"):
        run_layer(config, batches, rng.normal(size=(5, 3)))


def test_activations_beyond_the_public_bound_are_refused() -> None:
    rng = np.random.default_rng(4)
    batches = make_batches(rng, n_in=3, n_out=2, rows=[4], train=[False])
    batches[0].a[0, 0] = 1e4

    with pytest.raises(EncodingOverflowError):
        run_layer(CONFIGS["ckks"], batches, np.ones((3, 2)))


def test_wrong_shapes_are_refused() -> None:
    rng = np.random.default_rng(5)
    good = make_batches(rng, n_in=3, n_out=2, rows=[4], train=[True])
    with pytest.raises(InputError, match="initial weight"):
        run_layer(CONFIGS["paillier"], good, np.ones((2, 2)))
    with pytest.raises(InputError, match="dz"):
        run_layer(CONFIGS["paillier"], [good[0].__class__(good[0].a, np.ones((3, 2)))], np.ones((3, 2)))


def _huge_lane(fields: dict) -> dict:
    """A Paillier reply whose first lane is 2^4000, within the wire's width limit."""
    width = 512
    rest = fields["data"][fields["width"]:]
    lanes = [int.from_bytes(rest[i:i + fields["width"]], "little", signed=True)
             for i in range(0, len(rest), fields["width"])]
    data = b"".join(v.to_bytes(width, "little", signed=True) for v in [1 << 4000, *lanes])
    return {**fields, "width": width, "data": data}


@pytest.mark.parametrize("scheme, name, edit", [
    ("ckks", "z_reply", lambda f: {}),
    ("ckks", "z_reply", lambda f: {"values": "abc"}),
    ("ckks", "z_reply", lambda f: {"values": np.full_like(f["values"], np.nan)}),
    ("ckks", "g_reply", lambda f: {"values": f["values"][:1]}),
    ("ckks-generic", "z_reply", lambda f: {"values": np.full_like(f["values"], np.inf)}),
    ("paillier", "z_reply", _huge_lane),
    ("paillier", "g_reply", lambda f: {**f, "shape": [1, 1], "data": f["data"][:f["width"]]}),
    ("ckks", "init", lambda f: {"weight": f["weight"][:, :1]}),
], ids=["no values", "text", "NaN", "wrong shape", "generic inf", "paillier 2^4000", "paillier shape",
        "initial W~ shape"])
def test_a_malformed_reply_from_the_key_owner_is_a_decode_error(scheme: str, name: str, edit: Any) -> None:
    # Arrange: the passive party rewrites one of its replies
    from protocols.transport import run_parties

    rng = np.random.default_rng(8)
    batches = make_batches(rng, n_in=5, n_out=3, rows=[6], train=[True])
    w0 = rng.normal(size=(5, 3)) * 0.3
    kwargs = {"config": CONFIGS[scheme], "batches": batches, "w0": w0}
    # Act / Assert: a typed error from the active party, never NaN weights or a raw exception
    with pytest.raises(DecodeError):
        run_parties({"passive": lambda t, **kw: passive_role(Rewriting(t, name, edit), **kw),
                     "active": active_role}, kwargs={"passive": kwargs, "active": kwargs}, timeout=30)


def test_a_passive_width_past_packed_ckks_room_is_refused_before_any_message() -> None:
    # Arrange: with activation_bound 64 and mask_bits 16, a forward product's masked sum over
    # n_in inputs fits 2^33 for n_in <= 2047 (the evaluator overflowed at 2048 before the check)
    rng = np.random.default_rng(0)
    config = CONFIGS["ckks"]

    def layer(n_in: int):
        return run_layer(config, make_batches(rng, n_in, 2, [3], [True]), rng.normal(size=(n_in, 2)) * 0.05)

    # Act / Assert
    with pytest.raises(InputError, match=r"^n_in=2048 is too many inputs for packed CKKS .* \(at most 2047"):
        layer(2048)
    assert len(layer(2047).results["active"]["outputs"]) == 1


def test_a_vanishing_gradient_does_not_stop_packed_ckks() -> None:
    # Arrange: max |dz| of 1e-170 once made unscale_bits < -512, which the key owner refuses as malformed
    rng = np.random.default_rng(0)
    batches = [Batch(np.abs(rng.normal(size=(4, 3))), rng.normal(size=(4, 2)) * 1e-170)]
    w0 = rng.normal(size=(3, 2)) * 0.5
    # Act
    run = run_layer(CONFIGS["ckks"], batches, w0)
    # Assert
    z, da, _ = reference(batches, w0, CONFIGS["ckks"].lr)
    assert np.allclose(run.results["passive"]["grads"][0], da[0], atol=1e-12, rtol=0)
    assert np.allclose(run.results["active"]["outputs"][0], z[0], atol=TOLERANCE["ckks"], rtol=0)
