"""The in-process transport: tags, counting, the delivery log, timeouts and failures."""

import sys
import threading

import numpy as np
import pytest

from protocols.codec import Tag, encode
from protocols.errors import DecodeError, InputError, PeerTimeoutError, TagMismatchError
from protocols.transport import InProcessNetwork, run_parties
from protocols.transport.runner import SWITCH_INTERVAL

A, B = Tag(0, "stage", "a"), Tag(0, "stage", "b")


def test_messages_are_matched_by_tag_not_arrival_order():
    net = InProcessNetwork(["p", "q"])
    net["p"].send("q", A, x=1)
    net["p"].send("q", B, x=2)

    second = net["q"].recv("p", B)
    first = net["q"].recv("p", A)

    assert (first["x"], second["x"]) == (1, 2)


def test_bytes_and_messages_are_counted_on_both_sides():
    net = InProcessNetwork(["p", "q"])

    sent = net["p"].send("q", A, v=np.zeros(100))
    net["q"].recv("p", A)

    assert sent > 800
    assert net["p"].meter.bytes_sent == sent == net["q"].meter.bytes_received
    assert net["p"].meter.to_dict()["per_tag"]["stage/a"] == {"bytes": sent, "messages": 1}
    assert net["q"].meter.to_dict()["received_from"]["p"]["messages"] == 1


def test_silent_peer_raises_timeout_naming_peer_and_tag():
    net = InProcessNetwork(["p", "q"], timeout=0.2)

    with pytest.raises(PeerTimeoutError, match=r"'q'.*r0/stage/a"):
        net["p"].recv("q", A)


def test_frame_claiming_another_sender_is_refused():
    net = InProcessNetwork(["p", "q", "r"])
    net["q"]._mailbox.put("p", encode("r", "q", A, {}))  # arrives on p's link, claims r

    with pytest.raises(TagMismatchError, match="from 'r'"):
        net["q"].recv("p", A)


def test_frame_for_another_receiver_is_refused():
    net = InProcessNetwork(["p", "q", "r"])
    net["q"]._mailbox.put("p", encode("p", "r", A, {}))

    with pytest.raises(TagMismatchError, match="to 'r'"):
        net["q"].recv("p", A)


def test_a_frame_whose_header_json_python_cannot_parse_fails_that_peers_waits_with_decode_error():
    # Arrange: an int of 5000 digits (over Python's limit) in an otherwise valid header
    import struct

    from protocols.codec import MAGIC

    body = b'{"v":1,"src":"p","dst":"q","tag":[0,"stage","a"],"fields":[],"n":' + b"1" * 5000 + b"}"
    net = InProcessNetwork(["p", "q"], timeout=5)
    # Act: the frame is filed as the receiver thread of a network transport files it
    net["q"]._mailbox.put("p", struct.pack("<4sI", MAGIC, len(body)) + body)
    # Assert
    with pytest.raises(DecodeError, match="not valid JSON"):
        net["q"].recv("p", A)


def test_unknown_peer_is_an_input_error():
    net = InProcessNetwork(["p", "q"])

    with pytest.raises(InputError, match="no peer named 'z'"):
        net["p"].send("z", A)


def test_run_parties_returns_results_log_and_bytes():
    def left(t):
        t.send("right", A, v=np.arange(3))
        return "left done"

    def right(t, *, scale):
        return int(t.recv("left", A)["v"].sum()) * scale

    run = run_parties({"left": left, "right": right}, kwargs={"right": {"scale": 10}}, record=True)

    assert run.results == {"left": "left done", "right": 30}
    assert run.bytes == run.comm["left"]["bytes_sent"] > 0
    assert [m.tag for m in run.logs["right"]] == [A] and run.logs["left"] == []


def test_a_failing_party_wakes_the_others_and_its_error_is_raised():
    def broken(t):
        raise ValueError("party broke")

    def waiting(t):
        t.recv("broken", A, timeout=60)

    done = threading.Event()

    def run():
        with pytest.raises(ValueError, match="party broke"):
            run_parties({"broken": broken, "waiting": waiting})
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=10)
    assert done.is_set(), "the waiting party was not woken"


def test_unknown_backend_is_refused():
    with pytest.raises(InputError, match="unknown transport backend"):
        run_parties({"a": lambda t: 0, "b": lambda t: 0}, backend="grpc")


def test_parties_run_with_a_short_gil_switch_interval_which_is_restored_after():
    def role(transport):
        return sys.getswitchinterval()

    before = sys.getswitchinterval()
    run = run_parties({"p": role, "q": role})

    assert before > SWITCH_INTERVAL
    assert run.results == {"p": SWITCH_INTERVAL, "q": SWITCH_INTERVAL}
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "5", True])
def test_a_timeout_a_wait_cannot_take_is_refused_up_front(timeout):
    with pytest.raises(InputError, match="timeout must be a positive number of seconds"):
        InProcessNetwork(["p", "q"], timeout=timeout)


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "5"])
def test_a_recv_timeout_a_wait_cannot_take_is_refused(timeout):
    # before, NaN waited forever, inf overflowed the clock and "5" failed inside the wait
    transport = InProcessNetwork(["p", "q"], timeout=5.0)["p"]

    with pytest.raises(InputError, match=f"recv timeout must be a number of seconds >= 0, got {timeout!r}"):
        transport.recv("q", Tag(0, "s"), timeout=timeout)


def test_a_recv_timeout_of_zero_is_a_poll():
    # secure aggregation's server polls its clients this way (the first cut of the check refused it)
    transport = InProcessNetwork(["p", "q"], timeout=5.0)["p"]

    with pytest.raises(PeerTimeoutError):
        transport.recv("q", Tag(0, "s"), timeout=0)


def test_ctrl_c_taken_by_a_party_thread_stops_every_party_before_it_goes_on():
    import signal
    import time

    # Arrange: one party computes (as inside SEAL, no message wait) and looks at its messages
    # now and then; the other waits on it. The kernel may hand the process's SIGINT to either.
    started, listening = threading.Event(), threading.Event()
    release, woken, busy_ended = threading.Event(), threading.Event(), threading.Event()
    idents: list[int] = []

    def busy(transport):
        idents.append(threading.get_ident())
        started.set()
        end = time.monotonic() + 30
        try:
            while not release.is_set() and time.monotonic() < end:
                deadline = time.monotonic() + 0.2
                while time.monotonic() < deadline:
                    sum(range(1000))
                try:
                    transport.recv("waiting", B, timeout=0.01)
                except PeerTimeoutError:
                    pass
        finally:
            busy_ended.set()

    def waiting(transport):
        listening.set()
        try:
            transport.recv("busy", A)
        except Exception:
            woken.set()
            raise

    def ctrl_c():
        started.wait(10) and listening.wait(10)
        signal.pthread_kill(idents[0], signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    start = time.monotonic()
    # Act
    try:
        with pytest.raises(KeyboardInterrupt):
            run_parties({"busy": busy, "waiting": waiting})
        waited = time.monotonic() - start
        # Assert: the caller did not sit until the busy party's 30 s were up, and by the time
        # the interrupt reached it both parties had stopped (none left inside native code)
        assert waited < 15 and woken.is_set() and busy_ended.is_set()
    finally:
        release.set()


@pytest.mark.parametrize("parties", [[1, 2], ["p", ""], ["p", None]])
def test_party_names_that_are_not_non_empty_strings_are_refused_up_front(parties):
    # before, ints were accepted and the first message failed with a DecodeError blaming the peer
    with pytest.raises(InputError, match=r"party names must be non-empty strings, got \["):
        InProcessNetwork(parties)


@pytest.mark.parametrize("tag", ["r0/stage/a", ("0", "stage"), None])
def test_a_tag_that_is_not_a_tag_is_refused_at_once(tag):
    # before, send raised AttributeError and recv waited out its timeout, then blamed the peer
    net = InProcessNetwork(["p", "q"], timeout=60)

    with pytest.raises(InputError, match="tag must be a protocols.codec.Tag, got"):
        net["p"].send("q", tag, x=1)
    with pytest.raises(InputError, match="tag must be a protocols.codec.Tag, got"):
        net["q"].recv("p", tag)
    assert net["p"].meter.messages_sent == 0


def test_a_party_still_computing_after_an_interrupt_marks_the_process_to_end_with_os_exit(monkeypatch):
    # Arrange: one party computes without a message to notice the stop (STFL's VAE pretraining);
    # interpreter shutdown under its running torch threads aborted the process (exit 134, not 130)
    import signal
    import threading
    import time

    from protocols.transport import runner

    marked, release = [], threading.Event()
    monkeypatch.setattr(runner, "mark_stranded", lambda: marked.append(True))  # not this test process
    monkeypatch.setattr(runner, "STOP_GRACE", 0.5)

    def busy(transport):
        release.wait(30)

    def ctrl_c():
        time.sleep(0.5)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    # Act
    try:
        with pytest.raises(KeyboardInterrupt):
            run_parties({"busy": busy, "done": lambda transport: None})
    finally:
        release.set()
    # Assert
    assert marked == [True]


def test_fields_that_are_not_a_mapping_are_an_input_error():
    from protocols.codec import Tag
    from protocols.errors import InputError

    net = InProcessNetwork(["a", "b"])
    with pytest.raises(InputError, match="fields must be a mapping"):
        net["a"].send("b", Tag(0, "s", "m"), [("x", 1)])


@pytest.mark.parametrize("backend", ["inprocess", "torch"])
def test_a_run_timeout_a_wait_cannot_take_is_refused_before_any_party_starts(backend):
    from protocols.errors import InputError

    with pytest.raises(InputError, match="timeout must be a positive number of seconds, got nan"):
        run_parties({"a": lambda t: None, "b": lambda t: None}, backend=backend, timeout=float("nan"))


@pytest.mark.parametrize("backend", ["inprocess", "torch"])
def test_a_message_never_awaited_is_still_in_the_recorded_log(backend):
    # Arrange: what a party learns is read from its log, so a peer's message it never awaited
    # (a late one, or a protocol bug sending something extra) must be there too
    from tests.protocols.transport import roles

    # Act
    run = run_parties({"a": roles.ring_with_an_aside, "b": roles.ring_with_an_aside}, backend=backend,
                      record=True, timeout=60)
    # Assert: the awaited message first, then the one never awaited, with its values
    for party, peer in (("a", "b"), ("b", "a")):
        tags = [(m.src, m.tag) for m in run.logs[party]]
        assert tags == [(peer, roles.RING), (peer, roles.ASIDE)]
        assert run.logs[party][1]["secret"].tolist() == [0.0, 1.0, 2.0]
