"""A party whose role ended is gone on both backends, and stored failures are raised afresh."""

import threading

import pytest

from protocols.codec import Tag
from protocols.errors import CryptoError, DecodeError, PeerFailedError, PeerTimeoutError, TagMismatchError
from protocols.transport import InProcessNetwork, run_parties
from protocols.transport.base import fresh
from tests.protocols.transport import roles

A, B = Tag(0, "stage", "a"), Tag(0, "stage", "b")


def test_messages_sent_before_a_party_closed_are_delivered_then_waits_on_it_fail_at_once():
    # Arrange: p sends one message, then its transport closes (as when its role returns)
    net = InProcessNetwork(["p", "q"], timeout=60)
    net["p"].send("q", A, x=1)
    # Act
    net["p"].close()
    # Assert: what p sent still arrives; a wait for more fails at once instead of after 60 s
    assert net["q"].recv("p", A)["x"] == 1
    with pytest.raises(PeerFailedError, match="party 'p' closed its transport"):
        net["q"].recv("p", B)


def test_a_send_to_a_party_that_closed_fails_and_is_not_counted():
    net = InProcessNetwork(["p", "q"])
    net["p"].close()

    with pytest.raises(PeerFailedError, match="party 'q' cannot send to 'p': party 'p' closed its transport"):
        net["q"].send("p", A, x=1)
    assert net["q"].meter.messages_sent == 0 and net["q"].meter.bytes_sent == 0


def test_a_role_that_returned_is_a_dropout_in_process_as_over_torch():
    # before, in process, the wait on the returned client sat out the timeout (PeerTimeoutError failed
    # the run), and a send to it succeeded and was counted, where torch's failed at once
    # Act
    run = run_parties({"client": roles.quits, "server": roles.sends_to_present_after_quitter_left}, timeout=30)
    # Assert: the client is skipped as a dropout and nothing is counted for it
    assert run.results == {"client": "closed at once", "server": []}
    assert run.messages == 0 and run.bytes == 0


@pytest.mark.multiprocess
def test_a_returned_role_is_the_same_dropout_on_both_backends():
    roles_ = {"client": roles.quits, "server": roles.sends_to_present_after_quitter_left}

    local = run_parties(roles_, timeout=30)
    remote = run_parties(roles_, backend="torch", timeout=60)

    assert local.results == remote.results == {"client": "closed at once", "server": []}
    assert local.messages == remote.messages == 0


def test_each_wait_on_an_aborted_run_raises_its_own_exception():
    # before, every wait re-raised one shared instance: its traceback grew by three entries per wait
    # (3000 after 1000 waits) and threads shared it
    # Arrange
    net = InProcessNetwork(["a", "b"], timeout=5)
    net.abort(PeerFailedError("party 'x' failed"))
    # Act
    raised = []
    for i in range(50):
        with pytest.raises(PeerFailedError, match="party 'x' failed") as exc:
            net["a"].recv("b", Tag(i, "s"))
        raised.append(exc.value)
    with pytest.raises(PeerFailedError) as other:
        net["b"].recv("a", A)
    # Assert: distinct instances, each with the traceback of its own wait only
    assert len({id(e) for e in raised + [other.value]}) == 51
    assert _depth(raised[-1]) == _depth(raised[0]) < 10


def test_each_wait_on_a_failed_peer_raises_its_own_exception_with_the_cause():
    net = InProcessNetwork(["a", "b"], timeout=5)
    try:
        raise OSError("link broke")
    except OSError as cause:
        stored = PeerFailedError("party 'b' is gone")
        stored.__cause__ = cause
    net["a"]._mailbox.fail_peer("b", stored)

    first, second = (_raised(lambda: net["a"].recv("b", A)) for _ in range(2))

    assert first is not second and first is not stored
    assert str(first) == "party 'b' is gone" and first.__cause__ is stored.__cause__


@pytest.mark.parametrize("exc", [PeerFailedError("p"), DecodeError("d"), CryptoError("c"), TagMismatchError("t"),
                                 PeerTimeoutError("q", A, 2.0), KeyboardInterrupt()])
def test_every_stored_error_can_be_raised_afresh(exc):
    new = fresh(exc)

    assert type(new) is type(exc) and str(new) == str(exc) and new is not exc and new.__traceback__ is None


def test_an_exception_that_cannot_be_rebuilt_is_raised_as_it_is_without_its_traceback():
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(f"{a}/{b}")

    def fails():
        raise Odd(1, 2)

    stored = _raised(fails)

    assert fresh(stored) is stored and stored.__traceback__ is None


def _raised(call):
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - returned to the test
        return exc
    raise AssertionError("nothing raised")


def _depth(exc):
    n, tb = 0, exc.__traceback__
    while tb:
        n, tb = n + 1, tb.tb_next
    return n


def test_threads_waiting_on_one_failed_peer_get_distinct_exceptions():
    net = InProcessNetwork(["a", "b", "c"], timeout=30)
    got = {}
    threads = [threading.Thread(target=lambda n=n: got.__setitem__(n, _raised(lambda: net[n].recv("c", A))))
               for n in ("a", "b")]
    for t in threads:
        t.start()
    net["c"].close()
    for t in threads:
        t.join(timeout=30)

    assert isinstance(got["a"], PeerFailedError) and isinstance(got["b"], PeerFailedError)
    assert got["a"] is not got["b"]
