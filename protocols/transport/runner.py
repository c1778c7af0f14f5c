"""Run party-role functions together; one switch picks the backend.

A role is ``fn(transport, **kwargs) -> result``. With ``backend="inprocess"`` every
role runs in a thread of this process; with ``backend="torch"`` every role runs in
its own process over torch.distributed (gloo) on localhost. The role code is the
same for both.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from protocols.codec import Message
from protocols.errors import InputError, PeerFailedError
from protocols.lifecycle import mark_stranded
from protocols.transport.base import DEFAULT_TIMEOUT, Transport, checked_timeout
from protocols.transport.inprocess import InProcessNetwork

Role = Callable[..., Any]
BACKENDS = ("inprocess", "torch")
SWITCH_INTERVAL = 0.0005
"""GIL switch interval (seconds) while in-process parties run: see :func:`gil_handoff`."""
JOIN_POLL = 0.1
"""Seconds between the caller's looks for a signal while it waits on party threads."""
STOP_GRACE = 3.0
"""Seconds an interrupted run waits for its parties to stop before it lets the interrupt go on:
ample for a party to finish a native HE step and reach its next message. A party busy for
longer (STFL's VAE pretraining, which sends nothing) marks the process stranded, so that
:func:`protocols.lifecycle.exit_status` ends it with ``os._exit`` rather than in an interpreter
shutdown under its running torch threads (which aborts: exit 134 instead of 130)."""


@dataclass
class RunResult:
    """What a run produced: each party's return value, traffic and delivery log.

    ``logs`` (with ``record=True``): every message delivered to each party -- those it
    awaited, in order, then those that arrived and were never awaited
    (:meth:`~protocols.transport.base.Transport.delivered`).

    ``gpu_peak_mib``: with the torch backend, each party process that used CUDA reports its own
    peak GPU memory. In one process the parties share one counter, so a caller measures the
    whole run instead, and this stays empty.
    """

    results: dict[str, Any]
    comm: dict[str, dict[str, Any]]
    seconds: float
    logs: dict[str, list[Message]] = field(default_factory=dict)
    gpu_peak_mib: dict[str, float] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        """Total bytes sent by all parties."""
        return sum(c["bytes_sent"] for c in self.comm.values())

    @property
    def messages(self) -> int:
        return sum(c["messages_sent"] for c in self.comm.values())

    def gpu_fields(self) -> dict[str, Any]:
        """For a result object: the largest party peak and each party's, or nothing if none was measured."""
        if not self.gpu_peak_mib:
            return {}
        return {"gpu_peak_mib": max(self.gpu_peak_mib.values()), "gpu_peak_mib_per_party": dict(self.gpu_peak_mib)}


def run_parties(roles: Mapping[str, Role], *, kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                backend: str = "inprocess", timeout: float = DEFAULT_TIMEOUT, record: bool = False,
                port: int | None = None) -> RunResult:
    """Run each party's role to completion and return their results.

    ``kwargs[name]`` are passed to that party's role. If a party raises, the others
    are woken with :class:`PeerFailedError` and the first party's own exception is
    re-raised here.
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown transport backend {backend!r}; choose one of {list(BACKENDS)}")
    if len(roles) < 2:
        raise InputError(f"a run needs at least two parties, got {list(roles)}")
    timeout = checked_timeout(timeout, "timeout")  # over torch, else only each party process would say so
    kwargs = kwargs or {}
    unknown = set(kwargs) - set(roles)
    if unknown:
        raise InputError(f"kwargs given for unknown parties {sorted(unknown)}")
    if backend == "torch":
        from protocols.transport.torchdist import run_parties_torch
        return run_parties_torch(roles, kwargs=kwargs, timeout=timeout, record=record, port=port)
    return _run_inprocess(roles, kwargs, timeout, record)


def _run_inprocess(roles: Mapping[str, Role], kwargs: Mapping[str, Mapping[str, Any]],
                   timeout: float, record: bool) -> RunResult:
    network = InProcessNetwork(roles, timeout=timeout, record=record)
    results: dict[str, Any] = {}
    failures: list[tuple[str, BaseException]] = []
    lock = threading.Lock()
    done = {name: threading.Event() for name in roles}

    def target(name: str) -> None:
        gone = None
        try:
            value = roles[name](network[name], **kwargs.get(name, {}))
            with lock:
                results[name] = value
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            with lock:
                failures.append((name, exc))
            gone = PeerFailedError(f"party {name!r} failed: {type(exc).__name__}: {exc}")
            network.abort(gone)
        finally:
            network[name].close(gone)  # a party whose role ended is gone, as a torch party's process is
            done[name].set()

    start = time.perf_counter()
    threads = {name: threading.Thread(target=target, args=(name,), name=f"party-{name}", daemon=True)
               for name in roles}
    with gil_handoff(SWITCH_INTERVAL):
        try:
            for thread in threads.values():
                thread.start()
            _wait(done.values())
        except BaseException:  # Ctrl-C: the parties stop at their next message instead of running on
            network.abort(PeerFailedError("the run was interrupted"))
            started = [done[name] for name, thread in threads.items() if thread.ident is not None]
            _wait(started, within=STOP_GRACE)
            if not all(event.is_set() for event in started):  # one computes on, with no message to notice
                mark_stranded()  # end with os._exit: interpreter shutdown under its torch threads aborts
            raise
    seconds = time.perf_counter() - start
    if failures:
        raise _first_cause(failures)
    return RunResult(results=results, seconds=seconds,
                     comm={name: t.meter.to_dict() for name, t in network.transports.items()},
                     logs={name: t.delivered() for name, t in network.transports.items()})


def _wait(done: Iterable[threading.Event], *, within: float | None = None) -> None:
    """Wait until every party is done (for at most ``within`` seconds), waking every
    :data:`JOIN_POLL` seconds.

    Python runs signal handlers in the main thread only, and the kernel may hand a
    process's SIGINT to any of its threads; a bare ``join`` would then sit until the
    parties finish before Ctrl-C took effect. Waking lets the handler run. (Events, not
    ``Thread.join``: a join that Ctrl-C interrupts marks the thread stopped though it runs.)
    After an interrupt the caller waits (``within``) for the aborted parties to end:
    a party thread still inside SEAL or torch when the interpreter exits can take the
    process down with ``std::terminate`` (SIGABRT) instead of a clean exit status.
    """
    deadline = None if within is None else time.monotonic() + within
    for event in done:
        while not event.wait(JOIN_POLL):
            if deadline is not None and time.monotonic() >= deadline:
                return


@contextmanager
def gil_handoff(interval: float) -> Iterator[None]:
    """Run the body with CPython's GIL switch interval at most ``interval``, then restore it.

    In-process parties are threads of one interpreter, and native libraries such as
    TenSEAL keep the GIL through every call. A party that gave the GIL up (a message
    wait, file I/O) gets it back only when the running thread is asked to drop it,
    which CPython does after the switch interval: 5 ms by default, long enough that a
    party's short steps between another party's HE calls would each wait that long.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _first_cause(failures: list[tuple[str, BaseException]]) -> BaseException:
    """The exception that started the failure, not the PeerFailedErrors it caused."""
    for _, exc in failures:
        if not isinstance(exc, PeerFailedError):
            return exc
    return failures[0][1]


__all__ = ["BACKENDS", "RunResult", "Role", "Transport", "run_parties"]
