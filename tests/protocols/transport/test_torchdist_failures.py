"""The torch.distributed backend when a peer dies, a result cannot travel, or a setting is unusable."""

import math
import pickle
import threading

import pytest

from protocols.errors import InputError, ProtocolError
from protocols.transport import run_parties
from protocols.transport.torchdist import TorchDistTransport, _report, parse_address
from tests.protocols.transport import roles


def _peer_dies(sender_target, delay=1.0):
    """"dies" and "sender" in processes of their own: name -> what each put on the queue."""
    import functools
    import multiprocessing as mp

    from protocols.transport.torchdist import free_port

    ctx, port = mp.get_context("spawn"), free_port()
    results = ctx.Queue()
    targets = {"dies": functools.partial(roles.party_that_dies, delay=delay), "sender": sender_target}
    procs = [ctx.Process(target=target, args=(name, ("dies", "sender"), port, results))
             for name, target in targets.items()]
    for proc in procs:
        proc.start()
    try:
        return dict(results.get(timeout=90) for _ in procs)
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()


@pytest.mark.multiprocess
def test_a_send_that_sees_the_peer_die_raises_peer_failed_naming_both_and_marks_the_peer_failed():
    # before, gloo's raw RuntimeError escaped (send_to_present, which skips dropouts by
    # PeerFailedError, failed the run instead), unless this party's receiver had seen the break first
    # Act: the receiver keeps what it sees to itself, so the send itself meets the broken link
    outcome = _peer_dies(roles.send_sees_the_break)
    # Assert: one clear error with both names and gloo's gist; a later wait on the peer fails at once
    sent, waited = outcome["sender"]
    assert sent.startswith("protocols.errors.PeerFailedError: party 'sender' cannot send to 'dies':"
                           " link to party 'dies' broke: "), sent
    assert "pair.cc" not in sent and "GLHF" not in sent
    assert waited == "PeerFailedError"


@pytest.mark.multiprocess
def test_a_send_in_flight_when_the_peer_dies_ends_with_peer_failed_instead_of_hanging():
    # before, when this party's receiver saw the link break first, gloo never failed the send in
    # flight: it waited out the group's timeout (7 days) and the sender never reported
    # Act: 50 MB frames, so that one is in flight when the peer dies
    outcome = _peer_dies(roles.send_in_flight_when_peer_dies, delay=0.5)
    # Assert
    assert outcome["dies"] == "died"
    assert outcome["sender"].startswith("protocols.errors.PeerFailedError: party 'sender' cannot send to"
                                        " 'dies': link to party 'dies' broke: "), outcome["sender"]


@pytest.mark.multiprocess
def test_a_result_that_cannot_be_pickled_is_named_as_such():
    # before: "party process 'a' exited with code 0 without a result" (the queue's feeder thread
    # only printed the TypeError)
    with pytest.raises(ProtocolError, match="party 'a''s result cannot be sent to the launcher: TypeError: cannot"
                                            " pickle '_thread.lock' object"):
        run_parties({"a": roles.returns_a_lock, "b": roles.quits}, backend="torch", timeout=60)


def test_a_report_whose_error_cannot_be_pickled_still_reaches_the_launcher():
    report = _report("a", "error", ValueError(threading.Lock()), None, [], None)
    name, status, error, *_ = report

    pickle.dumps(report)  # what the queue will do with it

    assert (name, status, type(error)) == ("a", "error", ProtocolError)
    assert str(error).startswith("party 'a''s error (ValueError: <unlocked _thread.lock object")


@pytest.mark.parametrize("port", ["29500", 29500.5, True, None, 0, 65536])
def test_a_port_that_is_not_an_integer_in_range_is_an_input_error(port):
    # before, a str or float gave a raw TypeError
    with pytest.raises(InputError, match=f"invalid port {port!r}: must be an integer in 1-65535"):
        TorchDistTransport("a", ("a", "b"), host="127.0.0.1", port=port, connect_timeout=1)


@pytest.mark.parametrize("connect_timeout", [math.nan, math.inf, "5", 0, -1])
def test_a_connect_timeout_a_wait_cannot_take_is_an_input_error(connect_timeout):
    # before: ValueError (nan), OverflowError (inf), TypeError (str)
    with pytest.raises(InputError, match="connect_timeout must be a positive number of seconds"):
        TorchDistTransport("a", ("a", "b"), host="127.0.0.1", port=29517, connect_timeout=connect_timeout)


@pytest.mark.parametrize("text", ["host:\u00b2", "host:\u0661\u0662", "host:\uff18\uff10"])
def test_a_port_of_non_ascii_digits_is_an_input_error(text):
    # before, str.isdigit took "²" and int() then raised ValueError
    with pytest.raises(InputError, match="invalid port"):
        parse_address(text)


def test_a_call_left_blocked_raises_stranded_with_the_reason_once_it_is_known(monkeypatch):
    # the mechanism behind the test above, without gloo: a call that never returns by itself
    # Arrange
    from protocols.transport import watch

    marked, release, reason = [], threading.Event(), []
    monkeypatch.setattr(watch, "mark_stranded", lambda: marked.append(True))  # not this test process
    helper = watch.Helper("test-helper")
    threading.Timer(0.3, lambda: reason.append(OSError("link broke"))).start()
    # Act
    try:
        with pytest.raises(watch.Stranded, match="link broke") as raised:
            helper.run(lambda: release.wait(60), gone=lambda: reason[0] if reason else None, poll=0.05)
    finally:
        release.set()
        helper.stop()
    # Assert
    assert raised.value.reason is reason[0] and marked == [True]


def test_a_call_that_ends_gives_its_value_or_its_exception():
    from protocols.transport import watch

    helper = watch.Helper("test-helper")
    try:
        assert helper.run(lambda: 42) == 42
        with pytest.raises(KeyError, match="inside"):
            helper.run(lambda: {}["inside"])
        assert watch.run_beside(lambda: "beside", "test-beside") == "beside"
    finally:
        helper.stop()
