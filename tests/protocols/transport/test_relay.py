"""Progress relayed from party processes to the launcher (``--backend torch`` shows the same bar)."""

import multiprocessing as mp

import pytest

from protocols.transport import Relay, relayed
from tests.protocols.transport.roles import report_progress


def test_calls_made_in_another_process_run_in_the_launcher_in_order():
    # Arrange
    calls = []
    relay = Relay(lambda *args: calls.append(args))

    # Act: a spawned process (as torch-backend parties are) calls the relay
    with relay.forwarding():
        child = mp.get_context("spawn").Process(target=report_progress, args=(relay, 3))
        child.start()
        child.join(timeout=60)

    # Assert: every call, in order, once the forwarding context has ended
    assert child.exitcode == 0
    assert calls == [(1, 3), (2, 3), (3, 3), (3, 3, "vae")]


def test_the_launchers_callback_does_not_travel_to_the_party_process():
    # Arrange
    relay = Relay(print)

    # Act
    state = relay.__getstate__()

    # Assert: only the queue crosses; the callback (a tqdm bar, a closure) stays behind
    assert state["_callback"] is None and state["_queue"] is relay._queue


def test_in_process_parties_get_the_callback_itself_and_no_callback_stays_none():
    # Arrange
    def callback(*args):
        return None

    # Act / Assert
    with relayed(callback, "inprocess") as given:
        assert given is callback
    with relayed(None, "torch") as given:
        assert given is None
    with relayed(callback, "torch") as given:
        assert isinstance(given, Relay)


def test_a_failing_callback_fails_the_run_once_forwarding_ends_and_the_party_process_still_exits():
    # before, the callback's exception ended the forwarding thread: the queue filled, the party
    # process blocked at its exit (killed after 30 s by the launcher), and the error was only printed
    # Arrange: the callback fails at its first call; the party makes more calls than a pipe holds
    calls = []

    def callback(*args):
        calls.append(args)
        raise ValueError("the progress bar was closed")

    relay = Relay(callback)
    # Act
    with pytest.raises(ValueError, match="the progress bar was closed") as raised:
        with relay.forwarding():
            child = mp.get_context("spawn").Process(target=report_progress, args=(relay, 5000))
            child.start()
            child.join(timeout=60)
            exitcode = child.exitcode
            if child.is_alive():
                child.kill()
    # Assert: the party process ended on its own; the callback ran once, its error is raised here
    assert exitcode == 0
    assert len(calls) == 1
    assert "progress callback" in "".join(raised.value.__notes__)


def test_an_error_of_the_body_is_not_hidden_by_the_callbacks():
    def callback(*args):
        raise ValueError("callback")

    relay = Relay(callback)
    with pytest.raises(KeyError, match="body"):
        with relay.forwarding():
            relay(1, 2)  # queued and forwarded here as a party process's call would be
            raise KeyError("body")
