"""Peer sum: each member gets the group's total; what it receives hides each other member's vector."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.channels import fixedpoint
from protocols.channels.peersum import KEY_TAG, PeerSum
from protocols.codec import Tag
from protocols.errors import InputError, PeerFailedError, ProtocolError
from protocols.transport import run_parties

TAG = Tag(3, "exchange", "phi")


def member(transport, *, members, vectors, tags=(TAG,)):
    group = PeerSum.agree(transport, members=members)
    return [group.total(v, tag=t) for v, t in zip(vectors, tags)]


def run_group(vectors: dict[str, list[np.ndarray]], *, tags=(TAG,), record=False, backend="inprocess"):
    names = list(vectors)
    return run_parties({n: member for n in names},
                       kwargs={n: {"members": names, "vectors": vectors[n], "tags": tags} for n in names},
                       record=record, timeout=60, backend=backend)


def inputs(n: int, shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)  # test data, not crypto randomness
    return {f"hub{i}": rng.normal(scale=5.0, size=shape) for i in range(n)}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_every_member_gets_the_sum_of_all_vectors(n):
    # Arrange
    vectors = inputs(n, (40, 1))
    # Act
    run = run_group({k: [v] for k, v in vectors.items()})
    # Assert: the float sum, up to one rounding per member
    for name in vectors:
        (total,) = run.results[name]
        assert total.shape == (40, 1)
        np.testing.assert_allclose(total, sum(vectors.values()), atol=n * fixedpoint.resolution(24))


@settings(max_examples=15, deadline=None)
@given(st.integers(3, 4), st.integers(1, 30), st.floats(1e-3, 1e4))
def test_the_sum_holds_for_any_group_size_length_and_scale(n, length, scale):
    vectors = {k: v * scale for k, v in inputs(n, (length,), seed=length).items()}

    run = run_group({k: [v] for k, v in vectors.items()})

    for name in vectors:
        np.testing.assert_allclose(run.results[name][0], sum(vectors.values()),
                                   atol=n * fixedpoint.resolution(24), rtol=1e-12)


def test_with_three_members_no_received_vector_reads_as_its_senders():
    # Arrange
    vectors = inputs(3, (500,))
    # Act
    run = run_group({k: [v] for k, v in vectors.items()}, record=True)
    # Assert: each delivered word vector, decoded, is noise unrelated to its sender's vector,
    # and even after removing the mask the receiver shares with the sender it is still masked
    for receiver, log in run.logs.items():
        received = [m for m in log if m.tag == TAG]
        assert {m.src for m in received} == set(vectors) - {receiver}
        for message in received:
            words = message["masked"]
            assert words.dtype == np.uint64
            seen = fixedpoint.decode(words, scale_bits=24)
            assert abs(np.corrcoef(seen, vectors[message.src])[0, 1]) < 0.2
            leftover = words - fixedpoint.encode(vectors[message.src], scale_bits=24, n_summands=3)
            assert np.count_nonzero(leftover == 0) == 0
            assert 0.47 < np.unpackbits(leftover.view(np.uint8)).mean() < 0.53


def test_only_the_sum_of_everything_cancels_the_masks():
    # Arrange
    vectors = inputs(4, (300,))
    run = run_group({k: [v] for k, v in vectors.items()}, record=True)
    masked = {m.src: m["masked"] for m in run.logs["hub0"] if m.tag == TAG}
    masked["hub0"] = next(m["masked"] for m in run.logs["hub1"] if m.tag == TAG and m.src == "hub0")
    encoded = {k: fixedpoint.encode(v, scale_bits=24, n_summands=4) for k, v in vectors.items()}
    # Act / Assert: a proper subset of the masked vectors leaves masks; all four leave none
    for size in (1, 2, 3):
        for group in itertools.combinations(vectors, size):
            leftover = sum(masked[k] for k in group) - sum(encoded[k] for k in group)
            assert np.count_nonzero(leftover == 0) < 3
    assert np.array_equal(sum(masked.values()), sum(encoded.values()))


def test_each_exchange_uses_fresh_masks():
    # Arrange: the same vectors sent under two tags
    vectors = inputs(3, (64,))
    tags = (Tag(0, "exchange", "phi"), Tag(1, "exchange", "phi"))
    # Act
    run = run_group({k: [v, v] for k, v in vectors.items()}, tags=tags, record=True)
    # Assert
    first, second = ([m["masked"] for m in run.logs["hub0"] if m.tag == t and m.src == "hub1"][0] for t in tags)
    assert np.count_nonzero(first == second) == 0
    for name in vectors:
        np.testing.assert_allclose(run.results[name][0], run.results[name][1], atol=0)


@pytest.mark.multiprocess
def test_members_in_their_own_processes_get_the_in_process_sum():
    # Arrange: three members over torch.distributed, as TDCD's hubs on three machines
    vectors = inputs(3, (50, 2))
    # Act
    run = run_group({k: [v] for k, v in vectors.items()}, backend="torch")
    # Assert
    for name in vectors:
        np.testing.assert_allclose(run.results[name][0], sum(vectors.values()), atol=3 * fixedpoint.resolution(24))


def test_a_tag_used_twice_is_refused_before_anything_is_sent():
    vectors = inputs(2, (4,))

    with pytest.raises(InputError, match="was used already"):
        run_group({k: [v, v] for k, v in vectors.items()}, tags=(TAG, TAG))


def test_only_public_keys_cross_and_each_is_32_bytes():
    run = run_group({k: [v] for k, v in inputs(3, (8,)).items()}, record=True)

    keys = [m for log in run.logs.values() for m in log if m.tag == KEY_TAG]
    assert len(keys) == 6
    assert all(set(m.fields) == {"public"} and len(m["public"]) == 32 for m in keys)


def liar(transport, *, members, payload):
    """A member that agrees keys, then sends the others ``payload`` instead of masked words."""
    PeerSum.agree(transport, members=members)
    for peer in members:
        if peer != transport.name:
            transport.send(peer, TAG, masked=payload)
    try:  # stay until the member is done (it fails), so it never sends to a party gone
        transport.recv(members[0], TAG, timeout=30)
    except PeerFailedError:
        pass


@pytest.mark.parametrize("payload", [np.zeros(8, np.float32), np.zeros(7, np.uint64)])
def test_a_malformed_masked_vector_stops_the_receiver(payload):
    names = ["hub0", "hub1"]
    roles = {"hub0": member, "hub1": liar}
    kwargs = {"hub0": {"members": names, "vectors": [np.ones(8)]}, "hub1": {"members": names, "payload": payload}}

    with pytest.raises((ProtocolError, PeerFailedError), match="not 8 uint64 words"):
        run_parties(roles, kwargs=kwargs, timeout=30)


def low_order_key(transport, *, members):
    for peer in members:
        if peer != transport.name:
            transport.send(peer, KEY_TAG, public=bytes(32))


def test_a_low_order_key_is_a_protocol_error_naming_the_peer():
    # before, a 32-byte low-order point passed and key agreement failed with "message failed authentication"
    names = ["hub0", "hub1"]
    roles = {"hub0": member, "hub1": low_order_key}
    kwargs = {"hub0": {"members": names, "vectors": [np.ones(2)]}, "hub1": {"members": names}}

    with pytest.raises((ProtocolError, PeerFailedError), match="key from 'hub1' is not a usable"):
        run_parties(roles, kwargs=kwargs, timeout=30)


def test_a_member_outside_the_group_is_an_input_error():
    kwargs = {"hub0": {"members": ["hub1", "hub2"], "vectors": []},
              "hub1": {"members": ["hub0", "hub1"], "vectors": [np.ones(2)]}}

    with pytest.raises(InputError, match="'hub0' must be one of the members"):
        run_parties({"hub0": member, "hub1": member}, kwargs=kwargs, timeout=30)


def test_a_tag_that_is_not_a_tag_is_an_input_error():
    # Arrange
    vectors = inputs(2, (4,))
    # Act / Assert: once an AttributeError from the seed derivation
    with pytest.raises(InputError, match="tag must be"):
        run_group({k: [v] for k, v in vectors.items()}, tags=("phi",))
