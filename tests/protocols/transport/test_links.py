"""Authenticated links: the handshake over raw bytes, and sealed frames that fail on any change."""

import queue
import struct
import threading

import pytest

from protocols.channels import crypto
from protocols.errors import CryptoError, InputError
from protocols.transport.links import SEALED_LENGTH_BYTES, Link, check_identity, handshake


def _pair(a_key, b_key, *, a_trusts, b_trusts, tamper=None):
    """Run both ends of the handshake in threads over queues; (a's outcome, b's outcome)."""
    wires = {"a": queue.Queue(), "b": queue.Queue()}  # what each end receives
    outcome = {}

    def end(me, peer, key, trusts, initiator):
        def send(data):
            wires[peer].put(tamper(me, data) if tamper else data)
        try:
            outcome[me] = handshake(me, peer, initiator=initiator, identity=key, trusted=trusts,
                                    send=send, recv=lambda: wires[me].get(timeout=10))
        except CryptoError as exc:
            outcome[me] = exc

    threads = [threading.Thread(target=end, args=("a", "b", a_key, a_trusts, True)),
               threading.Thread(target=end, args=("b", "a", b_key, b_trusts, False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    return outcome["a"], outcome["b"]


@pytest.fixture
def keys():
    a, b = crypto.new_private_key(), crypto.new_private_key()
    return a, b, crypto.public_bytes(a), crypto.public_bytes(b)


def test_parties_that_trust_each_others_keys_get_a_working_link(keys):
    a, b, a_pub, b_pub = keys
    link_a, link_b = _pair(a, b, a_trusts=b_pub, b_trusts=a_pub)
    assert isinstance(link_a, Link) and isinstance(link_b, Link)
    sealed = link_a.seal(b"frame one")
    assert b"frame one" not in sealed and link_b.open(sealed) == b"frame one"
    assert link_a.open(link_b.seal(b"reply")) == b"reply"


def test_a_pinned_key_the_peer_does_not_hold_fails_both_ends(keys):
    a, b, a_pub, _ = keys
    stranger = crypto.public_bytes(crypto.new_private_key())
    out_a, out_b = _pair(a, b, a_trusts=stranger, b_trusts=a_pub)
    assert isinstance(out_a, CryptoError) and "the link to 'b' failed authentication" in str(out_a)
    assert isinstance(out_b, CryptoError)


def test_an_impostor_announcing_the_trusted_public_key_cannot_confirm(keys):
    # an impostor, holding its own private key, announces b's public key as its identity
    a, b, a_pub, b_pub = keys
    impostor = crypto.new_private_key()

    def swap_static(sender, data):  # the impostor's hello carries b's public key as its static key
        if sender == "b" and len(data) == 2 * crypto.KEY_BYTES:
            return data[:crypto.KEY_BYTES] + b_pub
        return data

    out_a, out_b = _pair(a, impostor, a_trusts=b_pub, b_trusts=a_pub, tamper=swap_static)
    assert isinstance(out_a, CryptoError) and isinstance(out_b, CryptoError)


@pytest.mark.parametrize("change", ["flip", "replay", "reorder", "foreign"])
def test_any_changed_frame_fails_authentication(keys, change):
    a, b, a_pub, b_pub = keys
    link_a, link_b = _pair(a, b, a_trusts=b_pub, b_trusts=a_pub)
    first, second = link_a.seal(b"first"), link_a.seal(b"second")
    if change == "flip":
        frames = [first[:-1] + bytes([first[-1] ^ 1])]
    elif change == "replay":
        frames = [first, first]
    elif change == "reorder":
        frames = [second, first]
    else:  # sealed on another link between the same two names
        other_a, _ = _pair(a, b, a_trusts=b_pub, b_trusts=a_pub)
        frames = [other_a.seal(b"first")]
    with pytest.raises(CryptoError, match="a frame from 'a' failed authentication"):
        for frame in frames:
            link_b.open(frame)


def test_identity_and_trusted_keys_go_together_and_pin_every_peer(keys):
    a, _, _, b_pub = keys
    with pytest.raises(InputError, match="go together"):
        check_identity("a", ("b",), a, None)
    with pytest.raises(InputError, match="no trusted key for 'c'"):
        check_identity("a", ("b", "c"), a, {"b": b_pub})
    check_identity("a", ("b",), None, None)


@pytest.mark.parametrize("bad, got", [("not-a-key", "got str"), (bytes(31), "got 31 bytes"),
                                      (32, "got int"), ("ab" * 32, "got str")])
def test_a_trusted_key_that_is_not_32_raw_bytes_is_refused_before_any_rendezvous(keys, bad, got):
    # before, only its presence was checked: a str failed after the rendezvous with a raw TypeError
    # (bytes("...")), and an int n became n zero bytes; the innocent peer saw its link break
    a, _, _, b_pub = keys
    # Act / Assert: the error names the entry and what a key must be
    with pytest.raises(InputError, match=rf"party 'a': trusted\['c'\] must be 'c''s raw X25519 public key"
                                         rf" \(32 bytes\), {got}$"):
        check_identity("a", ("b", "c"), a, {"b": b_pub, "c": bad})


def test_a_trusted_key_may_be_any_32_byte_buffer(keys):
    a, _, _, b_pub = keys

    check_identity("a", ("b",), a, {"b": bytearray(b_pub)})
    check_identity("a", ("b",), a, {"b": memoryview(b_pub)})


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 40])
def test_frames_longer_than_a_chunk_are_sealed_piecewise_and_open_whole(size):
    # Arrange: 8-byte chunks stand in for the AEAD's 2 GiB limit
    keys = (crypto.new_seed(), crypto.new_seed())
    sender = Link("a", "b", send_key=keys[0], recv_key=keys[1], chunk=8)
    receiver = Link("b", "a", send_key=keys[1], recv_key=keys[0], chunk=8)
    frame = bytes(range(size))
    # Act
    sealed = sender.seal(frame)
    # Assert: one tag per chunk, and the frame comes back whole, then the next one too
    assert len(sealed) == size + crypto.TAG_BYTES * max(1, -(-size // 8))
    assert receiver.open(sealed) == frame
    assert receiver.open(sender.seal(b"next")) == b"next"


def test_a_chunk_cut_from_a_long_frame_fails_authentication():
    keys = (crypto.new_seed(), crypto.new_seed())
    sender = Link("a", "b", send_key=keys[0], recv_key=keys[1], chunk=8)
    receiver = Link("b", "a", send_key=keys[1], recv_key=keys[0], chunk=8)
    sealed = sender.seal(bytes(20))
    with pytest.raises(CryptoError):
        receiver.open(sealed[:8 + crypto.TAG_BYTES] + sealed[2 * (8 + crypto.TAG_BYTES):])


def test_lengths_are_sealed_in_the_frames_counter_sequence():
    # Arrange
    keys = (crypto.new_seed(), crypto.new_seed())
    sender = Link("a", "b", send_key=keys[0], recv_key=keys[1], chunk=8)
    receiver = Link("b", "a", send_key=keys[1], recv_key=keys[0], chunk=8)
    frame = bytes(20)
    # Act
    head = sender.seal_length(sender.sealed_size(len(frame)))
    body = sender.seal(frame)
    # Assert: the length opens first, then the frame of that many sealed bytes, then the close signal
    assert len(head) == SEALED_LENGTH_BYTES and receiver.open_length(head) == len(body)
    assert receiver.open(body) == frame
    assert receiver.open_length(sender.seal_length(-1)) == -1


@pytest.mark.parametrize("forged", [struct.pack("<q", 1 << 34) + bytes(16), struct.pack("<q", 5)])
def test_a_forged_length_fails_authentication(forged):
    keys = (crypto.new_seed(), crypto.new_seed())
    receiver = Link("b", "a", send_key=keys[1], recv_key=keys[0])
    with pytest.raises(CryptoError, match="a frame from 'a' failed authentication"):
        receiver.open_length(forged)
