"""The secure channel: round trips, and one CryptoError for every tampering."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from protocols.channels import SecureChannel, crypto
from protocols.codec import Tag
from protocols.errors import CryptoError, InputError
from protocols.transport import InProcessNetwork, run_parties

from .helpers import leaked

T1, T2 = Tag(0, "app", "one"), Tag(0, "app", "two")


def _establish(net: InProcessNetwork, a: str, b: str, **kwargs) -> tuple[SecureChannel, SecureChannel]:
    """Run both ends of a handshake concurrently; kwargs go to both (a_/b_ prefixes to one)."""
    common = {k: v for k, v in kwargs.items() if not k.startswith(("a_", "b_"))}
    own = {side: {k[2:]: v for k, v in kwargs.items() if k.startswith(side + "_")} for side in "ab"}
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(SecureChannel.establish, net[a], b, initiator=True, **common, **own["a"])
        fb = pool.submit(SecureChannel.establish, net[b], a, initiator=False, **common, **own["b"])
        return fa.result(timeout=10), fb.result(timeout=10)


@pytest.fixture
def net() -> InProcessNetwork:
    return InProcessNetwork(["a", "b", "c"], timeout=5)


def _steal(net: InProcessNetwork, src: str, dst: str, tag: Tag) -> bytes:
    """Take the sealed frame off the wire before the channel sees it (a network attacker)."""
    return net[dst].recv(src, tag)["ct"]


def test_round_trip_both_directions_and_only_ciphertext_travels(net):
    ab, ba = _establish(net, "a", "b")
    weights = np.arange(6, dtype=np.float64).reshape(2, 3)

    ab.send(T1, w=weights, note="hi", blob=b"\x00\x01")
    ba.send(T2, ok=True)
    got = ba.recv(T1)
    back = ab.recv(T2)

    np.testing.assert_array_equal(got["w"], weights)
    assert (got.src, got.dst, got.tag, got["note"], got["blob"]) == ("a", "b", T1, "hi", b"\x00\x01")
    assert back["ok"] is True
    ab.send(T1, secret=b"attack at dawn")
    wire = net["b"].recv("a", T1)
    assert set(wire.fields) == {"ct"} and b"attack at dawn" not in wire["ct"]


def test_many_messages_in_order(net):
    ab, ba = _establish(net, "a", "b")

    for i in range(20):
        ab.send(T1, i=i)

    assert [ba.recv(T1)["i"] for _ in range(20)] == list(range(20))


def _assert_auth_failure(call) -> None:
    with pytest.raises(CryptoError) as info:
        call()
    assert str(info.value) == crypto.AUTH_FAILED


@pytest.mark.parametrize("position", [0, 17, -1])
def test_tampered_ciphertext_byte(net, position):
    ab, ba = _establish(net, "a", "b")
    ab.send(T1, x=np.ones(4))
    sealed = bytearray(_steal(net, "a", "b", T1))
    sealed[position] ^= 0x40

    net["a"].send("b", T1, ct=bytes(sealed))

    _assert_auth_failure(lambda: ba.recv(T1))
    _assert_auth_failure(lambda: ba.recv(T1))  # the channel stays closed afterwards


def test_tampered_tag(net):
    ab, ba = _establish(net, "a", "b")
    ab.send(T1, x=1)

    net["a"].send("b", T2, ct=_steal(net, "a", "b", T1))

    _assert_auth_failure(lambda: ba.recv(T2))


def test_replayed_message(net):
    ab, ba = _establish(net, "a", "b")
    ab.send(T1, x=1)
    sealed = _steal(net, "a", "b", T1)
    net["a"].send("b", T1, ct=sealed)
    assert ba.recv(T1)["x"] == 1

    net["a"].send("b", T1, ct=sealed)

    _assert_auth_failure(lambda: ba.recv(T1))


def test_reordered_messages_under_one_tag(net):
    ab, ba = _establish(net, "a", "b")
    ab.send(T1, x=1)
    ab.send(T1, x=2)
    first, second = _steal(net, "a", "b", T1), _steal(net, "a", "b", T1)

    net["a"].send("b", T1, ct=second)
    net["a"].send("b", T1, ct=first)

    _assert_auth_failure(lambda: ba.recv(T1))


def test_messages_received_out_of_send_order(net):
    ab, ba = _establish(net, "a", "b")
    ab.send(T1, x=1)
    ab.send(T2, x=2)

    _assert_auth_failure(lambda: ba.recv(T2))


def test_frame_for_another_party(net):
    ab, _ = _establish(net, "a", "b")
    _, ca = _establish(net, "a", "c", stage="chan2")
    ab.send(T1, x=1)

    net["a"].send("c", T1, ct=_steal(net, "a", "b", T1))

    _assert_auth_failure(lambda: ca.recv(T1))


def test_frame_claiming_another_sender(net):
    ab, ba = _establish(net, "a", "b")
    cb, bc = _establish(net, "c", "b", stage="chan2")
    ab.send(T1, x=1)

    net["c"].send("b", T1, ct=_steal(net, "a", "b", T1))

    _assert_auth_failure(lambda: bc.recv(T1))


def test_message_under_another_channels_key(net):
    old_ab, _ = _establish(net, "a", "b", round=0)
    _, new_ba = _establish(net, "a", "b", round=1)
    old_ab.send(T1, x=1)

    _assert_auth_failure(lambda: new_ba.recv(T1))


def test_pinned_identity_authenticates_the_peer(net):
    b_identity = crypto.new_private_key()

    ab, ba = _establish(net, "a", "b", b_identity=b_identity,
                        a_peer_identity=crypto.public_bytes(b_identity))
    ab.send(T1, x=5)

    assert ba.recv(T1)["x"] == 5


def test_pinned_identity_mismatch_fails_the_handshake(net):
    pinned = crypto.public_bytes(crypto.new_private_key())

    _assert_auth_failure(lambda: _establish(net, "a", "b", b_identity=crypto.new_private_key(),
                                            a_peer_identity=pinned))


def test_a_peer_identity_that_is_not_bytes_is_an_input_error_before_the_handshake(net):
    # Arrange: a str of the right length (it once passed the length check and failed later with TypeError)
    pinned = "x" * crypto.KEY_BYTES
    # Act / Assert
    with pytest.raises(InputError, match="peer_identity"):
        SecureChannel.establish(net["a"], "b", initiator=True, peer_identity=pinned, timeout=0.5)
    assert net["a"].meter.to_dict()["messages_sent"] == 0


@pytest.mark.parametrize("use", ["send", "recv"])
def test_a_tag_that_is_not_a_tag_is_an_input_error(net, use):
    # Arrange
    channel = SecureChannel(net["a"], "b", send_key=bytes(32), recv_key=bytes(32))
    # Act / Assert: once an AttributeError from deep inside the codec
    with pytest.raises(InputError, match="tag must be"):
        channel.send("t", x=1) if use == "send" else channel.recv("t", timeout=0.1)


class _LyingHello:
    """A transport proxy that announces someone else's static key in its hello."""

    def __init__(self, inner, static: bytes) -> None:
        self._inner, self._static = inner, static
        self.name, self.peers = inner.name, inner.peers

    def send(self, dst, tag, fields=None, /, **kw):
        if tag.name == "hello":
            kw["static"] = self._static
        return self._inner.send(dst, tag, fields, **kw)

    def recv(self, src, tag, *, timeout=None):
        return self._inner.recv(src, tag, timeout=timeout)


def test_impostor_announcing_the_pinned_key_cannot_talk(net):
    real_b = crypto.public_bytes(crypto.new_private_key())
    impostor = _LyingHello(net["b"], real_b)
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(SecureChannel.establish, net["a"], "b", initiator=True, peer_identity=real_b)
        fb = pool.submit(SecureChannel.establish, impostor, "a", initiator=False,
                         identity=crypto.new_private_key())
        ab, fake_ba = fa.result(timeout=10), fb.result(timeout=10)

    ab.send(T1, x=1)
    fake_ba.send(T2, x=2)

    _assert_auth_failure(lambda: fake_ba.recv(T1))
    _assert_auth_failure(lambda: ab.recv(T2))


def _talk(transport, *, peer, initiator):
    channel = SecureChannel.establish(transport, peer, initiator=initiator)
    if initiator:
        channel.send(T1, payload=b"secret payload" * 4)
        return channel.recv(T2)["reply"]
    msg = channel.recv(T1)
    channel.send(T2, reply="ok")
    return len(msg["payload"])


def test_no_key_material_in_any_delivered_message(recorder):
    result = run_parties({"a": _talk, "b": _talk}, record=True,
                         kwargs={"a": {"peer": "b", "initiator": True},
                                 "b": {"peer": "a", "initiator": False}})

    assert result.results == {"a": "ok", "b": 56}
    assert len(recorder.private_keys) == 2 and recorder.derived
    assert leaked(result.logs, recorder.all + [b"secret payload"]) == []


def test_repr_names_the_parties_only(net):
    ab, _ = _establish(net, "a", "b")

    assert repr(ab) == "SecureChannel('a' <-> 'b')"
