"""A helper process for the packed CKKS evaluator: a second core for its products.

SEAL (through TenSEAL's ``sealapi``) keeps the GIL, so threads cannot overlap two
packed products. :class:`EvaluatorHelper` is a process of the evaluator's own that
takes three kinds of job:

* the input gradient (``dz @ W~.T - dz @ Enc(E).T``), which needs nothing of the
  weight gradient (``Enc(a.T) @ dz``): the caller computes the second meanwhile;
* the second half of the giant groups of a product (the forward ``Enc(a) @ W~``): each
  side encodes only its groups' plaintext diagonals (the costliest part), the helper
  returns its partial sums, and the caller rotates them into place, adds its own and
  masks the whole. Both halves need every baby step (rotation) of the inputs: the helper
  computes them and sends them back first (an early reply), while the caller encodes its
  diagonals, so that they are rotated once, not twice (about 2% less time per HE-VFL run);
* preparing the next forward product: as soon as the caller has updated W~ it sends it,
  and the helper encodes its groups' diagonals while the key owner decrypts, back-propagates
  and encrypts the next batch, so that its part of the product is rotations and
  multiplications only. The caller gets no reply; a version number ties the prepared
  plaintexts to the matrix they encode.

While it waits for a job the helper makes fresh encryptions of zero (:data:`POOL`), for
its own outputs and for the caller's, which it hands over with each partial product.

The helper gets the public context once, then per job the key owner's fields as they
arrived (bytes, validated in the helper exactly as in the caller) and the evaluator's
own matrices. The pipe carries only what the evaluator's two processes pickled (bytes,
arrays, ints, plans); nothing a peer sent is unpickled, and no secret key exists on this side.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections import deque
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any, Callable, Generator, Mapping

import numpy as np

from protocols.errors import DecodeError, ProtocolError, SecureFLError
from protocols.he import CKKSPublicContext, load_public_context
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.packing import Plan, make_plan
from protocols.interactive.sealwire import ciphertext_bytes


POOL = 8
"""Fresh encryptions of zero the helper keeps ready (made while it waits for a job): every
output ciphertext needs one to re-randomise it, and SEAL's public-key encryption is the
costliest step after the rotations (~2.4 ms), so the caller takes its own from here too."""

SOCKET_BUFFER = 4 << 20
"""Send buffer asked for on the pipe (the kernel may grant less): a job of ~1 MB then goes
at once instead of waiting, in pieces, for the helper to finish an Enc(0) and read it."""

_ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
"""The helper is one process for one core: spinning BLAS threads would take the caller's."""


def input_bound(fields: Mapping[str, Any]) -> float:
    """The public bound 2^bound_exp that packed input fields announce."""
    bound = fields.get("bound_exp")
    if isinstance(bound, bool) or not isinstance(bound, int) or not 0 <= bound <= 64:
        raise DecodeError("packed input lacks a valid bound_exp")
    return 2.0 ** bound


def input_grad_fields(evaluator: PackedEvaluator, noise: Mapping[str, Any], dz: np.ndarray,
                      w: np.ndarray) -> dict[str, Any]:
    """Fields of Enc((dz @ w.T - dz @ E.T) / 2^j) (transposed: n_in x rows), re-randomised for the key owner.

    ``noise`` holds Enc(E / 2^j) with j its ``scale_exp`` (the key owner scales the walk
    eps_acc down to fit), so the clear term is scaled alike and the key owner multiplies back.
    """
    n_in, n_out = w.shape
    scale_exp = noise.get("scale_exp", 0)
    if isinstance(scale_exp, bool) or not isinstance(scale_exp, int) or not 0 <= scale_exp <= 64:
        raise DecodeError(f"packed noise has an invalid scale_exp {scale_exp!r}")
    plan = make_plan(evaluator.seal.slots, n_in, n_out, dz.shape[0])
    cts = evaluator.rerandomize(evaluator.load({k: v for k, v in noise.items() if k != "scale_exp"}, plan))
    outs, exponent = evaluator.product(cts, -dz.T, plan)
    return evaluator.revealed(outs, plan, exponent, input_bound(noise), np.ldexp((dz @ w.T).T, -scale_exp))


class _Evaluator(PackedEvaluator):
    """The helper's evaluator, with the plaintexts of one forward matrix kept ready."""

    prepared: tuple[Any, ...] | None = None  # (version, layout, groups, Prepared)


def _layout(plan: Plan) -> Plan:
    """What the plaintext diagonals depend on: the plan without its row count."""
    return replace(plan, rows=1)


def prepare_product(evaluator: _Evaluator, version: int, m: np.ndarray, plan: Plan, groups: range) -> None:
    """Encode ``m``'s diagonals for ``groups`` now (idle time) and keep them as ``version``."""
    evaluator.prepared = (version, _layout(plan), groups, evaluator.plaintexts(m, plan, groups))


def partial_product(evaluator: _Evaluator, fields: Mapping[str, Any], m: np.ndarray, plan: Plan,
                    groups: range, spare: int, version: int | None = None
                    ) -> Generator[list[list[bytes]], None, tuple[list[bytes | None], list[bytes]]]:
    """Serialised outputs of ``X @ m`` over giant ``groups`` only (see ``PackedEvaluator.product``),
    and up to ``spare`` fresh encryptions of zero from the helper's pool for the caller.

    First yields the baby steps (serialised rotations 1..s-1 of each input ciphertext), so that
    the caller, which needs the same ones for its own groups, does not compute them again.
    ``version``: the caller's word that ``m`` is what it prepared under that number
    (:func:`prepare_product`); the prepared plaintexts are used if layout and groups match too.
    """
    cts = evaluator.load(fields, plan)
    baby = evaluator.baby_steps(cts, plan)
    yield [[ciphertext_bytes(ct) for ct in steps[1:]] for steps in baby]
    ready = evaluator.prepared
    prepared = ready[3] if ready is not None and ready[:3] == (version, _layout(plan), groups) else None
    outs, _ = evaluator.product(cts, m, plan, groups, prepared, baby)
    zeros = [evaluator.zeros.pop() for _ in range(min(spare, len(evaluator.zeros)))]
    return [None if ct is None else ciphertext_bytes(ct) for ct in outs], [ciphertext_bytes(z) for z in zeros]


_JOBS: dict[str, Callable[..., Any]] = {"input_grad": input_grad_fields, "partial": partial_product,
                                        "prepare": prepare_product}
"""What the helper runs. A job that is a generator sends each value it yields as an early reply."""


def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it is ours, else a ProtocolError with its text (it must unpickle)."""
    return exc if isinstance(exc, SecureFLError) else ProtocolError(f"{type(exc).__name__}: {exc}")


def serve(fd: int) -> None:
    """The helper process's loop: a context first, then jobs until the pipe closes.

    The helper runs in a session of its own, out of reach of a terminal's Ctrl-C, and
    ignores SIGINT besides; it ends when its caller does (the pipe closes), instead of
    printing a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        _serve(conn)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the caller is gone


def _serve(conn: Connection) -> None:
    context, mask_bits = conn.recv()
    evaluator = _Evaluator(load_public_context("ckks", context, workers=1), mask_bits=mask_bits)
    while True:
        if len(evaluator.zeros) < POOL and not conn.poll(0):
            evaluator.zeros.append(evaluator.seal.zero())  # idle: make an Enc(0) for later
            continue
        name, args = conn.recv()
        try:
            conn.send(("ok", _run(_JOBS[name](evaluator, *args), conn)))
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception as exc:  # noqa: BLE001 - sent to the evaluator, which re-raises it
            conn.send(("error", _portable(exc)))


def _run(outcome: Any, conn: Connection) -> Any:
    """A job's result; a generator's yields go to the caller first, as early replies."""
    if not isinstance(outcome, Generator):
        return outcome
    while True:
        try:
            conn.send(("early", next(outcome)))
        except StopIteration as stop:
            return stop.value


class EvaluatorHelper:
    """One helper process running packed products for a CKKS evaluator.

    The process is a fresh interpreter (``python -c``; never a fork, since the caller
    may have threads inside SEAL, and not multiprocessing's spawn, which would re-run
    a script without a ``__main__`` guard). It starts at construction and loads the
    public context while the caller goes on; it runs one job at a time.
    :meth:`close` (or garbage collection) stops it.
    """

    def __init__(self, public: CKKSPublicContext, *, mask_bits: int) -> None:
        ours, theirs = socket.socketpair()
        for end in (ours, theirs):  # a job or a reply (~1 MB) is queued at once, not in steps
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        env = {**os.environ, **_ONE_THREAD, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        code = "import sys; from protocols.interactive.ckks_helper import serve; serve(int(sys.argv[1]))"
        with theirs:
            try:
                # its own session: a terminal's Ctrl-C goes to the caller alone, which then closes
                # the pipe; reaching the helper during its imports it would print a traceback
                self._process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno())],
                                                 pass_fds=[theirs.fileno()], env=env, start_new_session=True)
            except OSError as err:
                ours.close()
                raise ProtocolError(f"cannot start the packed CKKS helper process ({err}); "
                                    "run with helper=False") from err
        self._conn = Connection(ours.detach())
        self._close = weakref.finalize(self, _stop, self._conn, self._process)
        # the context (~6 MB with Galois keys) goes while the helper starts and the caller goes on
        self._greeting = threading.Thread(target=_greet, args=(self._conn, public.serialize(), mask_bits),
                                          name="ckks-helper-context", daemon=True)
        self._greeting.start()
        self._replies: deque[tuple[int, str]] = deque()  # (job, "ack" | "early" | "result") still to come
        self._jobs = itertools.count()

    def input_grad(self, noise: Mapping[str, Any], dz: np.ndarray,
                   w: np.ndarray) -> Callable[[], dict[str, Any]]:
        """Start :func:`input_grad_fields`; the returned call waits for its fields."""
        return self._submit("input_grad", dict(noise), np.array(dz, dtype=np.float64),
                            np.array(w, dtype=np.float64))

    def partial(self, fields: Mapping[str, Any], m: np.ndarray, plan: Plan, groups: range,
                spare: int = 0, version: int | None = None
                ) -> tuple[Callable[[], list[list[bytes]]],
                           Callable[[], tuple[list[bytes | None], list[bytes]]]]:
        """Start :func:`partial_product`; the two returned calls wait for its baby steps and for
        its result (waiting for the result alone skips the baby steps)."""
        result = self._submit("partial", dict(fields), np.array(m, dtype=np.float64), plan, groups, spare,
                              version, early=1)
        return functools.partial(self._wait, "early"), result

    def prepare(self, version: int, m: np.ndarray, plan: Plan, groups: range) -> None:
        """Start :func:`prepare_product` and go on: its errors surface with the next result."""
        self._send("prepare", version, np.array(m, dtype=np.float64), plan, groups)
        self._replies.append((next(self._jobs), "ack"))

    def _submit(self, name: str, *args: Any, early: int = 0) -> Callable[[], Any]:
        if any(kind != "ack" for _, kind in self._replies):
            raise ProtocolError("the helper is still busy with its previous job")
        self._send(name, *args)
        job = next(self._jobs)
        self._replies.extend([(job, "early")] * early + [(job, "result")])
        return functools.partial(self._wait, "result")

    def _send(self, name: str, *args: Any) -> None:
        self._greeting.join()
        try:
            self._conn.send((name, args))
        except OSError as err:
            raise ProtocolError("the packed evaluator's helper process stopped") from err

    def _wait(self, wanted: str) -> Any:
        """Read replies in order up to the next one of kind ``wanted`` and return its value.

        A job that fails sends one error and nothing else: the replies it still owed are dropped.
        """
        while self._replies:
            job, kind = self._replies.popleft()
            try:
                status, value = self._conn.recv()
            except (EOFError, OSError) as err:
                self._replies.clear()
                raise ProtocolError("the packed evaluator's helper process stopped") from err
            if status == "error":
                self._replies = deque(entry for entry in self._replies if entry[0] != job)
                raise value
            if status != ("early" if kind == "early" else "ok"):
                raise ProtocolError(f"the helper sent {status!r} where {kind!r} was due")
            if kind == wanted:
                return value
        raise ProtocolError("no job is waiting for the helper")

    def close(self) -> None:
        """Stop the helper process (idempotent)."""
        self._close()


def _greet(conn: Connection, context: bytes, mask_bits: int) -> None:
    try:
        conn.send((context, mask_bits))
    except OSError:
        pass  # the helper is gone; the first job reports it


def _stop(conn: Connection, process: subprocess.Popen) -> None:
    conn.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


__all__ = ["EvaluatorHelper", "input_bound", "input_grad_fields", "partial_product", "prepare_product",
           "serve"]
