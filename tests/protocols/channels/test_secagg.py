"""Secure aggregation: the sum and weighted mean, with and without masking and dropouts."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.channels import SecAggConfig, fixedpoint, secagg_client, secagg_server
from protocols.channels.bonawitz import check_unmask_request
from protocols.errors import CryptoError, DropoutError, EncodingOverflowError, InputError, ProtocolError
from protocols.transport import run_parties

from ..rewriting import Rewriting
from .helpers import client_inputs, run_round

SECURE = SecAggConfig(secure=True, threshold=3)
PLAIN = SecAggConfig(secure=False, threshold=3)
# dropout tests wait this long for clients that never answer
FAST_DROP = {"threshold": 3, "stage_timeout": 1.0}


def _tolerance(config: SecAggConfig, n: int) -> float:
    return n * fixedpoint.resolution(config.scale_bits) + 1e-9


@pytest.mark.parametrize("prg_name", ["aes128-ctr", "chacha20"])
def test_secure_sum_equals_plain_sum(prg_name):
    inputs = client_inputs(5, 300)
    config = SecAggConfig(threshold=3, prg=prg_name)

    result = run_round(inputs, config).results["server"]

    np.testing.assert_allclose(result.vector, sum(inputs.values()), atol=_tolerance(config, 5))
    assert result.survivors == tuple(inputs) and result.dropped == () and result.secure


def test_secure_and_plain_agree_up_to_fixed_point_error():
    inputs = client_inputs(4, 200, scale=50.0)

    secure = run_round(inputs, SecAggConfig(threshold=2)).results
    plain = run_round(inputs, SecAggConfig(secure=False, threshold=2)).results

    np.testing.assert_allclose(secure["server"].vector, plain["server"].vector,
                               atol=_tolerance(SECURE, 4))
    np.testing.assert_array_equal(plain["server"].vector, sum(inputs.values()))
    assert all(secure[c] is True and plain[c] is True for c in inputs)


def test_negative_values_and_default_majority_threshold():
    inputs = {name: -np.abs(v) - 3.0 for name, v in client_inputs(3, 64).items()}

    result = run_round(inputs, SecAggConfig()).results["server"]

    assert result.threshold == 2
    assert np.all(result.vector < -9.0)
    np.testing.assert_allclose(result.vector, sum(inputs.values()), atol=_tolerance(SECURE, 3))


@pytest.mark.parametrize("secure", [True, False])
def test_weighted_average(secure):
    inputs = client_inputs(4, 100)
    weights = {"c0": 1.0, "c1": 2.0, "c2": 3.5, "c3": 10.0}

    mean = run_round(inputs, SecAggConfig(secure=secure, threshold=3), weights=weights).results["server"]

    expected = np.average(np.stack(list(inputs.values())), axis=0, weights=list(weights.values()))
    np.testing.assert_allclose(mean, expected, atol=1e-6)


@pytest.mark.parametrize("secure", [True, False])
def test_two_of_five_drop_after_key_sharing_and_the_sum_is_still_right(secure):
    inputs = client_inputs(5, 200)
    drops = {"c1": "share_keys", "c4": "share_keys"}

    run = run_round(inputs, SecAggConfig(secure=secure, **FAST_DROP), drops=drops)

    result = run.results["server"]
    expected = sum(v for c, v in inputs.items() if c not in drops)
    np.testing.assert_allclose(result.vector, expected, atol=_tolerance(SECURE, 5))
    assert result.dropped == ("c1", "c4") and result.survivors == ("c0", "c2", "c3")
    # the two have left (their roles returned), which the server notices at once, as over torch,
    # instead of waiting out the stage timeout as for a silent client
    assert result.wait_seconds < FAST_DROP["stage_timeout"]
    assert run.results["c1"] is None and run.results["c0"] is True


def test_dropouts_at_every_stage():
    inputs = client_inputs(6, 50)
    drops = {"c0": "advertise", "c2": "share_keys", "c5": "masked_input"}

    result = run_round(inputs, SecAggConfig(**FAST_DROP), drops=drops).results["server"]

    # c5 sent its masked input before dropping, so it is in the sum; the others are not
    expected = inputs["c1"] + inputs["c3"] + inputs["c4"] + inputs["c5"]
    np.testing.assert_allclose(result.vector, expected, atol=_tolerance(SECURE, 6))
    assert result.survivors == ("c1", "c3", "c4", "c5")


@pytest.mark.parametrize("secure", [True, False])
def test_three_of_five_dropping_is_a_dropout_error(secure):
    inputs = client_inputs(5, 20)
    drops = {"c0": "share_keys", "c1": "share_keys", "c2": "share_keys"}

    with pytest.raises(DropoutError, match="only 2 of 5 clients.*threshold t=3.*n - t = 2"):
        run_round(inputs, SecAggConfig(secure=secure, **FAST_DROP), drops=drops)


def test_overflow_raises_and_names_the_parameter():
    inputs = client_inputs(5, 10, scale=1e12)

    with pytest.raises(EncodingOverflowError, match="scale_bits=24.*n_summands=5"):
        run_round(inputs, SECURE)


@pytest.mark.parametrize("server, client, setting", [
    (SecAggConfig(threshold=2), SecAggConfig(threshold=3), "threshold"),
    (SecAggConfig(), SecAggConfig(prg="chacha20"), "prg='aes128-ctr'.*prg='chacha20'"),
    (SecAggConfig(), SecAggConfig(scale_bits=20), "scale_bits=24.*scale_bits=20"),
], ids=["threshold", "prg", "scale_bits"])
def test_mismatched_configs_are_refused(server, client, setting):
    # Arrange: before, another prg summed to ~1e11 and another scale to a wrong value, without an error
    inputs = client_inputs(3, 10)
    # Act / Assert
    with pytest.raises(ProtocolError, match=setting):
        _run_with_configs(inputs, server=server, client=client)


def _run_with_configs(inputs, *, server, client):
    roles = {"server": secagg_server, **{c: secagg_client for c in inputs}}
    kwargs = {"server": {"clients": list(inputs), "config": server},
              **{c: {"server": "server", "vector": v, "config": client} for c, v in inputs.items()}}
    return run_parties(roles, kwargs=kwargs, timeout=10)


@pytest.mark.parametrize("doctored", [{"threshold": 2.0}, {"n_clients": True}, {"n_clients": 1},
                                      {"scale_bits": 24.0}, {"prg": ["aes128-ctr"]}],
                         ids=["float t", "bool n", "n=1", "float scale_bits", "list prg"])
def test_a_roster_of_the_wrong_types_or_size_is_a_protocol_error(doctored):
    # Arrange: a server that answers one client's advertisement with a doctored roster
    import threading

    from protocols.channels.config import secagg_tag
    from protocols.transport import InProcessNetwork

    net = InProcessNetwork(["server", "c0", "c1"], timeout=5)
    caught = []

    def client():
        try:
            secagg_client(net["c0"], server="server", vector=np.ones(3), config=SecAggConfig())
        except Exception as exc:  # the test inspects whichever type comes out
            caught.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    advert = net["server"].recv("c0", secagg_tag(0, "advertise"))
    keys = lambda name: np.frombuffer(advert[name] + bytes(range(1, 33)), np.uint8).reshape(2, 32)  # noqa: E731
    # Act
    settings = {"threshold": 2, "n_clients": 2, "scale_bits": 24, "prg": "aes128-ctr", **doctored}
    net["server"].send("c0", secagg_tag(0, "roster"), names=["c0", "c1"], c_pks=keys("c_pk"),
                       s_pks=keys("s_pk"), **settings)
    thread.join()
    # Assert: the server's fault, typed as such (not InputError, which means the caller's input)
    assert len(caught) == 1 and type(caught[0]) is ProtocolError


@pytest.mark.parametrize("stage, edit", [
    ("advertise", lambda f: {**f, "c_pk": f["c_pk"][:5]}),
    ("advertise", lambda f: {**f, "c_pk": bytes(32)}),
    ("advertise", lambda f: {**f, "s_pk": bytes(32)}),
    ("shares", lambda f: {**f, "to": f["to"][:1]}),
    ("masked", lambda f: {**f, "y": f["y"][:-1]}),
    ("masked", lambda f: {}),
    ("reveal", lambda f: {**f, "b_shares": f["b_shares"][:, :3]}),
], ids=["short key", "low-order c_pk", "low-order s_pk", "shares for too few", "short masked input", "no fields",
        "short shares"])
def test_a_client_whose_message_is_malformed_is_dropped_and_the_others_are_summed(stage, edit):
    # Arrange: five clients, c0 buggy at one stage (it may fail afterwards; the round must not); c0 is
    # first in every list, so its reveal would be among the t the server uses
    inputs = client_inputs(5, 12)
    config = SecAggConfig(stage_timeout=5.0)

    def faulty(transport, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return secagg_client(Rewriting(transport, stage, edit), **kwargs)
        except ProtocolError as exc:
            return f"stopped: {exc}"

    roles = {"server": secagg_server, **{c: secagg_client for c in inputs}, "c0": faulty}
    kwargs = {"server": {"clients": list(inputs), "config": config},
              **{c: {"server": "server", "vector": v, "config": config} for c, v in inputs.items()}}
    # Act
    result = run_parties(roles, kwargs=kwargs, timeout=30).results["server"]
    # Assert: c0 is out (a reveal comes after its input was summed: then it is in, and not a responder)
    kept = [c for c in inputs if c in result.survivors]
    assert np.allclose(result.vector, sum(inputs[c] for c in kept), atol=1e-6)
    assert ("c0" in result.survivors) == (stage == "reveal") and len(kept) >= 4


def _flip_first_b_share(fields: dict) -> dict:
    shares = fields["b_shares"].copy()
    shares[0, 40] ^= 1
    return {**fields, "b_shares": shares}


def test_a_wrong_revealed_share_fails_the_round_instead_of_the_sum():
    # Arrange: five clients, threshold 3, so two spare responders; c0 reveals a well-formed but wrong
    # share of the first survivor's self-mask seed. Before, the server read only the first t shares and
    # returned a sum off by ~1e11 with no error.
    inputs = client_inputs(5, 6)
    config = SecAggConfig(threshold=3, stage_timeout=5.0)
    roles = {"server": secagg_server, **{c: secagg_client for c in inputs},
             "c0": lambda transport, **kw: secagg_client(Rewriting(transport, "reveal", _flip_first_b_share), **kw)}
    kwargs = {"server": {"clients": list(inputs), "config": config},
              **{c: {"server": "server", "vector": v, "config": config} for c, v in inputs.items()}}
    # Act / Assert
    with pytest.raises(CryptoError, match="revealed shares are inconsistent"):
        run_parties(roles, kwargs=kwargs, timeout=30)


@pytest.mark.parametrize("edit", [
    lambda f: {**f, "x": f["x"][:-1]},
    lambda f: {**f, "x": np.full_like(f["x"], np.nan)},
    lambda f: {**f, "x": f["x"].astype(np.int64)},
    lambda f: {},
], ids=["short input", "NaN input", "integer input", "no fields"])
def test_plain_aggregation_drops_a_malformed_client_as_secure_aggregation_does(edit):
    # Arrange: five clients, c0's clear input malformed on the wire; c0 is first in every list
    inputs = client_inputs(5, 12)
    config = SecAggConfig(secure=False, stage_timeout=5.0)
    roles = {"server": secagg_server, **{c: secagg_client for c in inputs},
             "c0": lambda transport, **kw: secagg_client(Rewriting(transport, "plain", edit), **kw)}
    kwargs = {"server": {"clients": list(inputs), "config": config},
              **{c: {"server": "server", "vector": v, "config": config} for c, v in inputs.items()}}
    # Act
    result = run_parties(roles, kwargs=kwargs, timeout=30).results["server"]
    # Assert: before, a short or integer input stopped the round and a NaN one poisoned the sum
    assert result.dropped == ("c0",)
    np.testing.assert_allclose(result.vector, sum(inputs[c] for c in inputs if c != "c0"))


def test_consecutive_rounds_use_fresh_masks():
    inputs = client_inputs(3, 30)

    first = run_round(inputs, SecAggConfig(threshold=2), round=0, record=True)
    second = run_round(inputs, SecAggConfig(threshold=2), round=1, record=True)

    ys = [[m["y"] for m in run.logs["server"] if m.tag.name == "masked"] for run in (first, second)]
    assert not any(np.array_equal(a, b) for a, b in zip(*ys, strict=True))
    np.testing.assert_allclose(first.results["server"].vector, second.results["server"].vector)


@pytest.mark.parametrize("kwargs", [
    {"threshold": 1}, {"threshold": 2.0}, {"scale_bits": 60}, {"prg": "rc4"},
    {"stage_timeout": 0}, {"stage_timeout": float("inf")}, {"stage_timeout": 10**400}, {"secure": 1},
])
def test_config_is_validated(kwargs):
    with pytest.raises(InputError):
        SecAggConfig(**kwargs)


def test_config_threshold_rules():
    assert SecAggConfig().threshold_for(10) == 6
    assert SecAggConfig(secure=False, threshold=1).threshold_for(1) == 1
    with pytest.raises(InputError, match="exceeds"):
        SecAggConfig(threshold=4).threshold_for(3)
    with pytest.raises(InputError, match="at least 2 clients"):
        SecAggConfig().threshold_for(1)


@pytest.mark.parametrize("vector, weight", [
    (np.ones((2, 2)), 1.0), (np.array([1.0, np.nan]), 1.0), (np.ones(3), 0.0), (np.ones(3), -1.0),
    (np.array(["a"]), 1.0),
])
def test_bad_client_inputs_are_input_errors(vector, weight):
    with pytest.raises(InputError):
        run_round({"c0": vector, "c1": np.ones(3)}, SecAggConfig(threshold=2),
                  weights={"c0": weight, "c1": 1.0})


def test_unmask_request_rules():
    members = ("a", "b", "c", "d")

    assert check_unmask_request(members, ("a", "c", "d"), 3) == ("b",)
    for survivors in [("a", "x", "c"), ("a", "a", "c"), ("a", "b")]:
        with pytest.raises(ProtocolError):
            check_unmask_request(members, survivors, 3)
