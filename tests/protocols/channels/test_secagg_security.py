"""What the server sees, read from its transport's delivery log (semi-honest model)."""

from __future__ import annotations

import itertools
import time

import numpy as np

from protocols.channels import SecAggConfig, bonawitz_client, fixedpoint, shamir

from .helpers import client_inputs, leaked, run_round

CONFIG = SecAggConfig(threshold=3, stage_timeout=1.0)


def _received(log, name):
    return {m.src: m for m in log if m.tag.name == name}


def test_server_sees_only_masked_vectors_yet_the_sum_is_right():
    inputs = client_inputs(5, 1000)

    run = run_round(inputs, CONFIG, record=True)

    masked = {c: m["y"] for c, m in _received(run.logs["server"], "masked").items()}
    assert set(masked) == set(inputs)
    for client, y in masked.items():
        encoded = fixedpoint.encode(inputs[client], scale_bits=CONFIG.scale_bits, n_summands=5)
        mask = y - encoded
        assert not np.allclose(fixedpoint.decode(y, scale_bits=CONFIG.scale_bits), inputs[client], atol=1.0)
        assert np.count_nonzero(mask == 0) == 0
        bits = np.unpackbits(mask.view(np.uint8))
        assert 0.47 < bits.mean() < 0.53  # the mask looks uniform
    np.testing.assert_allclose(run.results["server"].vector, sum(inputs.values()), atol=1e-5)


def test_no_partial_sum_of_masked_vectors_reveals_the_inputs():
    inputs = client_inputs(4, 500)

    run = run_round(inputs, CONFIG, record=True)

    masked = {c: m["y"] for c, m in _received(run.logs["server"], "masked").items()}
    for size in (1, 2, 3):
        for group in itertools.combinations(inputs, size):
            leftover = sum(masked[c] for c in group) - sum(
                fixedpoint.encode(inputs[c], scale_bits=CONFIG.scale_bits, n_summands=4) for c in group)
            assert np.count_nonzero(leftover == 0) < 3


def test_plain_mode_shows_the_server_the_inputs_for_contrast():
    inputs = client_inputs(3, 50)

    run = run_round(inputs, SecAggConfig(secure=False, threshold=2), record=True)

    for client, message in _received(run.logs["server"], "plain").items():
        np.testing.assert_array_equal(message["x"], inputs[client])


def test_server_never_gets_both_share_sets_of_one_client():
    inputs = client_inputs(5, 100)
    drops = {"c1": "share_keys", "c3": "share_keys"}

    run = run_round(inputs, CONFIG, drops=drops, record=True)

    reveals = _received(run.logs["server"], "reveal")
    b_of = {u for m in reveals.values() for u in m["b_of"]}
    sk_of = {u for m in reveals.values() for u in m["sk_of"]}
    assert b_of == {"c0", "c2", "c4"} and sk_of == {"c1", "c3"}
    assert not b_of & sk_of
    assert set(reveals) == {"c0", "c2", "c4"}


def test_no_secret_appears_in_any_delivered_message(recorder, monkeypatch):
    shares: list[bytes] = []
    split = shamir.split

    def recording_split(secret, n, threshold):
        out = split(secret, n, threshold)
        shares.extend(s.y_bytes() for s in out)
        return out

    monkeypatch.setattr(shamir, "split", recording_split)
    inputs = client_inputs(5, 200)

    run = run_round(inputs, CONFIG, drops={"c2": "share_keys"}, record=True)

    assert len(recorder.private_keys) == 10 and len(recorder.seeds) == 5
    assert leaked(run.logs, recorder.all) == []
    # shares travel sealed; only the unmasking stage reveals (the allowed) shares to the server
    early = {p: [m for m in log if m.tag.name != "reveal"] for p, log in run.logs.items()}
    assert leaked(early, shares) == []
    assert leaked(run.logs, shares)  # ...and the check does see shares where they are sent


def test_server_result_holds_no_key_material(recorder):
    inputs = client_inputs(3, 20)

    run = run_round(inputs, SecAggConfig(threshold=2), record=True)

    result = run.results["server"]
    blob = result.vector.tobytes() + repr(result).encode()
    assert not any(secret in blob for secret in recorder.all)


def test_a_reveal_too_late_for_a_server_that_finished_ends_the_client_quietly(monkeypatch):
    # Arrange: c1 answers the unmask request after the server's stage timeout; the server unmasks
    # with the others' shares and its role ends, so its transport is closed before c1 sends
    import threading

    check = bonawitz_client.check_unmask_request

    def slow_for_c1(*args, **kwargs):
        if threading.current_thread().name == "party-c1":
            time.sleep(1.5 * CONFIG.stage_timeout)
        return check(*args, **kwargs)

    monkeypatch.setattr(bonawitz_client, "check_unmask_request", slow_for_c1)
    inputs = client_inputs(4, 50)
    # Act
    run = run_round(inputs, CONFIG)
    # Assert: c1's masked input is in the sum (the others' shares of its seed unmask it), and c1 ends
    # as one that took part instead of failing the run on the closed server
    assert run.results["c1"] is True and run.results["server"].dropped == ()
    np.testing.assert_allclose(run.results["server"].vector, sum(inputs.values()), atol=1e-5)


def test_late_client_is_left_out_and_only_its_pairwise_key_is_revealed(monkeypatch):
    mask = bonawitz_client._mask

    def slow_for_c1(*args, **kwargs):
        if args[5] == "c1":  # _mask(encoded, b_seed, s_sk, roster, members, me, ...)
            time.sleep(1.5 * CONFIG.stage_timeout)
        return mask(*args, **kwargs)

    monkeypatch.setattr(bonawitz_client, "_mask", slow_for_c1)
    inputs = client_inputs(4, 50)

    run = run_round(inputs, CONFIG, record=True)

    assert run.results["c1"] is False and run.results["server"].dropped == ("c1",)
    expected = inputs["c0"] + inputs["c2"] + inputs["c3"]
    np.testing.assert_allclose(run.results["server"].vector, expected, atol=1e-5)
    reveals = _received(run.logs["server"], "reveal").values()
    assert all(m["sk_of"] == ["c1"] and "c1" not in m["b_of"] for m in reveals)
