"""Progress relayed from party processes to the launcher (``--backend torch`` shows the same bar)."""

import multiprocessing as mp

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
