"""Model averaging over secure aggregation: identical results with masking on or off."""

import numpy as np
import pytest
import torch

from protocols.channels import SecAggConfig
from protocols.errors import InputError
from protocols.transport import run_parties
from securefl.runtime.federated import assign, averaging_server, client_average, flatten

CLIENTS = ("c0", "c1", "c2")


def _client(transport, *, tensors, config, rounds, weight):
    for r in range(rounds):
        client_average(transport, server="server", tensors=tensors, config=config, round=r, weight=weight)
        with torch.no_grad():
            for t in tensors:
                t.add_(1.0)
    return [t.clone() for t in tensors]


def _client_that_leaves(transport, *, tensors, config, rounds, weight, leave_after=None):
    """Takes part in the first ``leave_after`` rounds (all without it), then ends (its transport
    closes); returns a numpy vector, which crosses from a party process intact."""
    rounds = rounds if leave_after is None else leave_after
    return flatten(_client(transport, tensors=tensors, config=config, rounds=rounds, weight=weight))


def _tensors():
    gen = torch.Generator().manual_seed(0)
    return {c: [torch.randn(3, 4, generator=gen), torch.randn(5, generator=gen)] for c in CLIENTS}


def _run(secure, rounds=2, record=False):
    config = SecAggConfig(secure=secure)
    tensors = _tensors()
    roles = {"server": averaging_server, **{c: _client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "rounds": rounds, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": rounds, "weight": i + 1.0}
                 for i, c in enumerate(CLIENTS)}}
    return tensors, run_parties(roles, kwargs=kwargs, record=record)


def test_flatten_and_assign_round_trip():
    # Arrange
    tensors = [torch.zeros(2, 3), torch.zeros(4)]
    vector = np.arange(10, dtype=np.float64)
    # Act
    assign(tensors, vector)
    # Assert
    np.testing.assert_array_equal(flatten(tensors), vector)


def test_secure_and_plain_averages_agree_and_equal_the_weighted_mean():
    # Arrange
    start = _tensors()
    expected = sum((i + 1.0) * flatten(start[c]) for i, c in enumerate(CLIENTS)) / 6.0
    # Act
    _, plain = _run(False)
    _, secure = _run(True)
    # Assert: after round 0 every client loaded the same mean; round 1 averages identical tensors again
    for c in CLIENTS:
        np.testing.assert_allclose(flatten(plain.results[c]), expected + 2.0, atol=1e-5)
        np.testing.assert_allclose(flatten(secure.results[c]), flatten(plain.results[c]), atol=1e-5)
    assert len(secure.results["server"]["round_seconds"]) == 2


def test_server_sees_only_masked_client_vectors():
    # Arrange / Act
    _, run = _run(True, rounds=1, record=True)
    # Assert: each client's vector reached the server only as a masked ring element
    plain = {c: flatten(v) for c, v in _tensors().items()}
    carried = [(m.src, v) for m in run.logs["server"] for v in m.fields.values()
               if isinstance(v, np.ndarray) and v.shape == (18,)]
    assert {src for src, _ in carried} == set(CLIENTS)
    for src, value in carried:
        assert value.dtype.kind in "iu"
        weighted = plain[src] * (CLIENTS.index(src) + 1.0)
        decoded = value[:17].astype(np.int64).astype(np.float64) / 2.0**24
        assert not np.allclose(decoded, weighted, atol=1e-3)


def test_rounds_must_be_positive():
    with pytest.raises(InputError, match="rounds"):
        averaging_server(None, clients=CLIENTS, rounds=0, config=SecAggConfig())


def test_a_client_whose_training_diverged_is_named_with_the_likely_cause():
    # Arrange: c1's weights went to nan in local training
    config = SecAggConfig(secure=True)
    tensors = _tensors()
    tensors["c1"][0][0, 0] = float("nan")
    roles = {"server": averaging_server, **{c: _client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "rounds": 1, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": 1, "weight": 1.0} for c in CLIENTS}}
    # Act / Assert
    with pytest.raises(InputError, match=r"'c1', round 0: .* nan or inf .*lower learning rate"):
        run_parties(roles, kwargs=kwargs, timeout=20)


def _server_sending_nan(transport, *, clients, config):
    """A server that aggregates as usual, then sends every client an average of nan."""
    import numpy as np

    from protocols.channels import secagg_server
    from securefl.runtime.federated import average_tag, send_to_present

    result = secagg_server(transport, clients=clients, config=config, round=0)
    send_to_present(transport, clients, average_tag(0), x=np.full(len(result.vector) - 1, np.nan, np.float32))


def test_a_client_refuses_a_non_finite_average_from_the_server():
    # Arrange
    from protocols.errors import ProtocolError

    config = SecAggConfig(secure=False)
    tensors = _tensors()
    roles = {"server": _server_sending_nan, **{c: _client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": 1, "weight": 1.0} for c in CLIENTS}}
    # Act / Assert: the server's fault named, not loaded (nor blamed on the client's own training)
    with pytest.raises(ProtocolError, match="the average from 'server' holds nan or inf"):
        run_parties(roles, kwargs=kwargs, timeout=20)


def test_a_server_refuses_to_send_an_average_beyond_float32():
    # Arrange: plain inputs of 1e300 are finite, their float32 average is not
    from protocols.errors import ProtocolError

    config = SecAggConfig(secure=False)
    tensors = {c: [torch.full((2,), 1e300, dtype=torch.float64)] for c in CLIENTS}
    roles = {"server": averaging_server, **{c: _client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "rounds": 1, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": 1, "weight": 1.0} for c in CLIENTS}}
    # Act / Assert
    with pytest.raises(ProtocolError, match="the clients' average is beyond float32's range"):
        run_parties(roles, kwargs=kwargs, timeout=20)


@pytest.mark.multiprocess
@pytest.mark.parametrize("secure", [True, False], ids=["secure", "plain"])
def test_a_client_that_leaves_drops_out_and_the_others_average_on(secure):
    # Arrange: c2 leaves after round 0 of 3; one process per party, as over a network
    config = SecAggConfig(secure=secure)
    start = _tensors()
    roles = {"server": averaging_server, **{c: _client_that_leaves for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "rounds": 3, "config": config},
              **{c: {"tensors": start[c], "config": config, "rounds": 3, "weight": 1.0} for c in ("c0", "c1")},
              "c2": {"tensors": start["c2"], "config": config, "rounds": 3, "weight": 1.0, "leave_after": 1}}
    expected = sum(flatten(start[c]) for c in CLIENTS) / 3.0 + 3.0  # now: the parties share these tensors
    # Act
    run = run_parties(roles, kwargs=kwargs, backend="torch", timeout=60)
    # Assert: round 0 averaged all three; rounds 1-2 average c0 and c1, which hold the same values by then
    assert run.results["server"]["dropped"] == {"c2": 1}
    for c in ("c0", "c1"):
        np.testing.assert_allclose(run.results[c], expected, atol=1e-5)


def _server_slower_than_its_stage(transport, *, clients, config):
    """server_average's first round with 1.5 stage timeouts of work between the sum and the answer."""
    import time

    from protocols.channels import secagg_server, weighted_mean
    from securefl.runtime.federated import average_tag, send_to_present

    mean = weighted_mean(secagg_server(transport, clients=clients, config=config, round=0))
    time.sleep(1.5 * config.stage_timeout)
    send_to_present(transport, clients, average_tag(0), x=mean.astype(np.float32))


@pytest.mark.parametrize("secure", [True, False], ids=["secure", "plain"])
def test_clients_wait_for_the_average_longer_than_the_servers_stage_timeout(secure):
    # Arrange: the transports' default wait is the stage timeout, as in gl, chfl and tdcd
    config = SecAggConfig(secure=secure, stage_timeout=1.0)
    tensors = _tensors()
    roles = {"server": _server_slower_than_its_stage, **{c: _client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": 1, "weight": 1.0} for c in CLIENTS}}
    expected = sum(flatten(tensors[c]) for c in CLIENTS) / 3.0 + 1.0
    # Act: before, every client timed out after stage_timeout while the server still worked
    run = run_parties(roles, kwargs=kwargs, timeout=config.stage_timeout)
    # Assert
    for c in CLIENTS:
        np.testing.assert_allclose(flatten(run.results[c]), expected, atol=1e-5)


def test_the_wait_for_the_average_is_twice_the_stage_timeout():
    # Arrange: record the timeout of the client's recv of the average
    from securefl.runtime.federated import average_tag

    config = SecAggConfig(secure=False, stage_timeout=2.0)
    waits = []

    def spying_client(transport, **kwargs):
        recv = transport.recv

        def spy(src, tag, *, timeout=None):
            waits.append((tag, timeout))
            return recv(src, tag, timeout=timeout)

        transport.recv = spy
        return _client(transport, **kwargs)

    tensors = _tensors()
    roles = {"server": averaging_server, **{c: spying_client for c in CLIENTS}}
    kwargs = {"server": {"clients": CLIENTS, "rounds": 1, "config": config},
              **{c: {"tensors": tensors[c], "config": config, "rounds": 1, "weight": 1.0} for c in CLIENTS}}
    # Act
    run_parties(roles, kwargs=kwargs, timeout=config.stage_timeout)
    # Assert
    assert waits == [(average_tag(0), 2 * config.stage_timeout)] * 3
