"""Module-level role functions, so spawned processes can import them."""

import signal
import time

import numpy as np

from protocols.codec import Tag

RING = Tag(0, "ring", "value")


def ring(transport, *, length: int = 1000):
    """Each party sends its rank-filled vector to the next and sums what it got."""
    me = transport.parties.index(transport.name)
    nxt = transport.parties[(me + 1) % len(transport.parties)]
    prev = transport.parties[me - 1]
    transport.send(nxt, RING, v=np.full(length, me, dtype=np.float64))
    return float(transport.recv(prev, RING)["v"].sum())


def fails(transport):
    raise KeyError("role failed on purpose")


def waits(transport):
    return transport.recv("fails", RING)


def silent(transport):
    time.sleep(3.0)  # alive but mute, longer than the waiter's timeout
    return "said nothing"


def quits(transport):
    return "closed at once"


def waits_for_quitter(transport):
    return transport.recv("quits", RING, timeout=30.0)


def waits_briefly(transport):
    return transport.recv("silent", RING, timeout=1.0)


def sigint_blocked(transport):
    """Whether this party's process blocks SIGINT (the launcher answers Ctrl-C)."""
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def sends_late(transport):
    """Sends to "quits" after it has surely closed its transport."""
    time.sleep(3.0)
    transport.send("quits", RING, v=np.zeros(1))
    return "sent"


def join_and_report(name, parties, port, agreements, results):
    """Join a torch.distributed group with ``agreements[name]``; put (name, "ok" or the error text)
    on ``results``."""
    from protocols.transport.torchdist import TorchDistTransport

    try:
        TorchDistTransport(name, parties, host="127.0.0.1", port=port, connect_timeout=30,
                           agree=agreements[name]).close()
        results.put((name, "ok"))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put((name, f"{type(exc).__name__}: {exc}"))


def _as_authenticated_party(name, parties, port, keys, trust_of, results, body, **options):
    """Join with an identity (raw private key ``keys[name]``) trusting ``trust_of[name]``, run
    ``body(transport)``; put (name, its value or the error text) on ``results``."""
    from protocols.channels.crypto import load_private
    from protocols.transport.torchdist import TorchDistTransport

    try:
        transport = TorchDistTransport(name, parties, host="127.0.0.1", port=port, connect_timeout=30,
                                       identity=load_private(keys[name]), trusted=trust_of[name], **options)
        try:
            value = body(transport)
        finally:
            transport.close(linger=2.0)
        results.put((name, value))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put((name, f"{type(exc).__name__}: {exc}"))


def authenticated_ring(name, parties, port, keys, trust_of, results):
    """:func:`ring` with length 5 over authenticated links (see :func:`_as_authenticated_party`)."""
    _as_authenticated_party(name, parties, port, keys, trust_of, results, lambda t: ring(t, length=5))


def forged_length(name, parties, port, keys, trust_of, results):
    """Over authenticated links, party "m" puts a forged length on the wire (as a man in the middle
    could: 2**34 and a made-up tag) in place of a sealed one; party "v" waits for a frame from it."""
    _as_authenticated_party(name, parties, port, keys, trust_of, results, _forge_or_wait, timeout=20)


def _forge_or_wait(transport):
    import struct

    import torch
    import torch.distributed as dist

    from protocols.codec import Tag

    if transport.name == "m":
        forged = struct.pack("<q", 1 << 34) + bytes(16)
        with transport._send_locks["v"]:
            dist.send(torch.frombuffer(bytearray(forged), dtype=torch.uint8), dst=0)
        return "sent"
    transport.recv("m", Tag(0, "forged", "frame"))
    return "received a frame"


def rejoin_after_a_failed_handshake(name, parties, port, keys, trust_of, results):
    """Join on ``port[0]`` with identities whose handshake fails, then again without them on
    ``port[1]``; put (name, (first outcome, second outcome)) on ``results``."""
    import torch.distributed as dist

    from protocols.channels.crypto import load_private
    from protocols.transport.torchdist import TorchDistTransport

    try:
        TorchDistTransport(name, parties, host="127.0.0.1", port=port[0], connect_timeout=30,
                           identity=load_private(keys[name]), trusted=trust_of[name])
        first = "joined"
    except Exception as exc:  # noqa: BLE001 - reported to the test
        first = type(exc).__name__
    first += ", group left" if not dist.is_initialized() else ", group still initialised"
    try:
        TorchDistTransport(name, parties, host="127.0.0.1", port=port[1], connect_timeout=30).close(linger=2.0)
        second = "joined"
    except Exception as exc:  # noqa: BLE001 - reported to the test
        second = f"{type(exc).__name__}: {exc}"
    results.put((name, (first, second)))


def ring_on_a_fake_gpu(transport, *, peak_mib: float):
    """``ring``, in a process whose CUDA counters say it used a GPU with this peak (no GPU needed)."""
    import torch

    torch.cuda.is_initialized = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.max_memory_allocated = lambda device=None: peak_mib * 2**20
    return ring(transport, length=4)


def report_progress(progress, steps: int) -> None:
    """A party process's progress calls, as an algorithm makes them: (done, total) and a phase."""
    for done in range(1, steps + 1):
        progress(done, steps)
    progress(steps, steps, "vae")


def sends_to_present_after_quitter_left(transport):
    """Waits for "client" (which sends nothing and returns), then sends to whoever is still there."""
    from protocols.errors import PeerFailedError
    from protocols.transport import send_to_present

    try:
        transport.recv("client", RING, timeout=30.0)
    except PeerFailedError:
        pass
    return send_to_present(transport, ["client"], Tag(1, "ring", "after"), v=np.zeros(10))


def returns_a_lock(transport):
    """A result that cannot be pickled."""
    import threading

    return threading.Lock()


DYING = Tag(0, "dying")


def party_that_dies(name, parties, port, results, delay=1.0):
    """Joins, says it is about to die, and dies ``delay`` s later without closing its transport
    (its receiver reads on meanwhile)."""
    import os

    from protocols.transport.torchdist import TorchDistTransport

    transport = TorchDistTransport(name, parties, host="127.0.0.1", port=port, connect_timeout=30, timeout=30)
    transport.send("sender", DYING)
    results.put((name, "died"))
    results.close()
    results.join_thread()
    time.sleep(delay)
    os._exit(3)


def send_sees_the_break(name, parties, port, results):
    """After the peer said it dies, sends small frames until a send fails, with this party's receiver
    keeping what it saw to itself (as when the send sees the break first); puts (name, (the send's
    error text, the type of a later wait's error)) on ``results``."""
    import threading

    def body(transport):
        record = transport._mailbox.fail_peer
        transport._mailbox.fail_peer = lambda src, exc: (
            None if threading.current_thread().name.startswith("recv-") else record(src, exc))
        transport.recv("dies", DYING)
        first = _send_until_it_fails(transport, np.zeros(16), 10_000)
        return first, type(_error_of(lambda: transport.recv("dies", RING, timeout=30))).__name__
    _as_party(name, parties, port, results, body)


def send_in_flight_when_peer_dies(name, parties, port, results):
    """Sends the peer 50 MB frames until a send fails (one is nearly always in flight when it dies).
    Puts (name, the send's error text) on ``results``."""
    def body(transport):
        return _send_until_it_fails(transport, np.zeros(50_000_000, dtype=np.uint8), 200)
    _as_party(name, parties, port, results, body)


def _as_party(name, parties, port, results, body):
    """Joins, puts (name, ``body(transport)`` or the error text) on ``results`` and ends as a party
    process does (at once if a send was left blocked in gloo)."""
    from protocols.lifecycle import exit_status
    from protocols.transport.torchdist import TorchDistTransport

    try:
        with TorchDistTransport(name, parties, host="127.0.0.1", port=port, connect_timeout=30, timeout=30) as t:
            value = body(t)
        results.put((name, value))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put((name, f"{type(exc).__name__}: {exc}"))
    results.close()
    results.join_thread()
    exit_status(0)


def _send_until_it_fails(transport, payload, tries):
    for i in range(tries):
        error = _error_of(lambda: transport.send("dies", Tag(i, "after"), v=payload))
        if error is not None:
            return f"{type(error).__module__}.{type(error).__name__}: {error}"
        time.sleep(0.001)
    return "every send went through"


def _error_of(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - returned to the caller
        return exc
    return None


ASIDE = Tag(0, "ring", "aside")


def ring_with_an_aside(transport, *, length: int = 10):
    """As :func:`ring`, and each party also sends its next one a message that is never awaited,
    before it sends the ring's (so it has arrived when the ring's has)."""
    me = transport.parties.index(transport.name)
    transport.send(transport.parties[(me + 1) % len(transport.parties)], ASIDE, secret=np.arange(3.0))
    return ring(transport, length=length)
