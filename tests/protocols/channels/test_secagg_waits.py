"""Clients outwait the server's stage timeout, so a silent client is dropped instead of failing the round.

The algorithms run secure aggregation with ``run_parties(timeout=stage_timeout)``: a
client recv without its own timeout would wait exactly as long as the server's stage,
from a slightly later start, and give up while the server was still working.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from protocols.channels import SecAggConfig, bonawitz_server, secagg_client, secagg_server
from protocols.transport import run_parties

from .helpers import client_inputs

STAGE = 1.0  # seconds; the slow server step below takes half of it beyond the stage


def _spying_client(transport, *, waits, **kwargs):
    """secagg_client, recording the timeout of every recv from the server."""
    recv = transport.recv

    def spy(src, tag, *, timeout=None):
        waits.append((tag.name, timeout))
        return recv(src, tag, timeout=timeout)

    transport.recv = spy
    return secagg_client(transport, **kwargs)


def test_every_wait_for_the_server_is_twice_the_stage_timeout():
    # Arrange
    config = SecAggConfig(threshold=2, stage_timeout=3.0)
    waits: list[tuple[str, float | None]] = []
    inputs = client_inputs(3, 5)
    roles = {"server": secagg_server, **{c: _spying_client for c in inputs}}
    kwargs = {"server": {"clients": list(inputs), "config": config},
              **{c: {"server": "server", "vector": v, "config": config, "waits": waits} for c, v in inputs.items()}}
    # Act
    run_parties(roles, kwargs=kwargs, timeout=config.stage_timeout)
    # Assert: roster, inbox and unmask, each waited for 2 x stage_timeout (not the transport's default)
    assert sorted({name for name, _ in waits}) == ["inbox", "roster", "unmask"] and len(waits) == 9
    assert [timeout for _, timeout in waits] == [2 * config.stage_timeout] * 9


def test_a_silent_client_is_dropped_while_the_server_works_past_its_stage_timeout(monkeypatch):
    # Arrange: c0 goes silent after sharing keys, so the server waits its whole stage for c0's masked
    # input, then sums for STAGE / 2 more before it asks for the unmasking shares
    real_summed = bonawitz_server.summed

    def slow_summed(inputs, members):
        time.sleep(STAGE / 2)
        return real_summed(inputs, members)

    monkeypatch.setattr(bonawitz_server, "summed", slow_summed)
    config = SecAggConfig(stage_timeout=STAGE)
    inputs = client_inputs(5, 20)
    roles = {"server": secagg_server, **{c: secagg_client for c in inputs}}
    kwargs = {"server": {"clients": list(inputs), "config": config},
              **{c: {"server": "server", "vector": v, "config": config,
                     "drop_after": "share_keys" if c == "c0" else None} for c, v in inputs.items()}}
    # Act: the transports' default wait is the stage timeout, as in gl, chfl and tdcd
    run = run_parties(roles, kwargs=kwargs, timeout=STAGE)
    # Assert: before, the honest clients timed out waiting for "unmask" and the round failed
    result = run.results["server"]
    assert result.dropped == ("c0",)
    np.testing.assert_allclose(result.vector, sum(v for c, v in inputs.items() if c != "c0"), atol=1e-6)


@pytest.mark.parametrize("stage_timeout, wait", [(0.5, 1.0), (1e300, threading.TIMEOUT_MAX)])
def test_client_wait_is_twice_the_stage_timeout_up_to_the_longest_lock_wait(stage_timeout, wait):
    assert SecAggConfig(stage_timeout=stage_timeout).client_wait == wait
