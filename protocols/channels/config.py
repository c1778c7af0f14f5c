"""Settings and results of a secure-aggregation round, shared by client and server roles."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from protocols.channels.fixedpoint import MAX_SCALE_BITS
from protocols.checks import finite_number
from protocols.channels.prg import DEFAULT_PRG, PRGS
from protocols.codec import Tag
from protocols.errors import InputError

SECAGG_STAGE = "secagg"
DropStage = Literal["advertise", "share_keys", "masked_input"]
DROP_STAGES: tuple[str, ...] = ("advertise", "share_keys", "masked_input")


def secagg_tag(round: int, name: str) -> Tag:
    """The tag of secure-aggregation message ``name`` in ``round``."""
    return Tag(round, SECAGG_STAGE, name)


@dataclass(frozen=True)
class SecAggConfig:
    """How a round aggregates; server and clients must be given equal configs.

    secure:        mask the inputs (Bonawitz et al. 2017) or send them in clear; the
                   role functions and the result are the same either way.
    threshold:     Shamir threshold t: the round survives while at least t clients
                   remain (up to n - t dropouts). ``None`` = a majority, n // 2 + 1.
                   Secure rounds need t >= 2 (t = 1 would hand every client every
                   other client's secrets). With t <= n / 2, a server that lies
                   about who dropped could tell two disjoint groups of t clients
                   different stories and collect both a client's self-mask seed
                   and its pairwise key; the majority default rules that out.
    scale_bits:    fixed-point scale 2^scale_bits; the rounding error is
                   2^-(scale_bits+1) per value and client, and inputs must satisfy
                   |value| * 2^scale_bits * n_clients < 2^63.
    prg:           mask expansion, ``"aes128-ctr"`` or ``"chacha20"``.
    stage_timeout: seconds the server waits for each stage's messages before
                   counting the clients that sent nothing as dropped. Clients wait
                   :attr:`client_wait` (twice as long) for the server's answers.
    """

    secure: bool = True
    threshold: int | None = None
    scale_bits: int = 24
    prg: str = DEFAULT_PRG
    stage_timeout: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.secure, bool):
            raise InputError(f"SecAggConfig.secure must be a bool, got {self.secure!r}")
        if self.threshold is not None:
            if not isinstance(self.threshold, int) or isinstance(self.threshold, bool):
                raise InputError(f"SecAggConfig.threshold must be an int or None, got {self.threshold!r}")
            low = 2 if self.secure else 1
            if self.threshold < low:
                raise InputError(f"SecAggConfig.threshold must be >= {low}, got {self.threshold}")
        if not isinstance(self.scale_bits, int) or isinstance(self.scale_bits, bool) \
                or not 0 <= self.scale_bits <= MAX_SCALE_BITS:
            raise InputError(f"SecAggConfig.scale_bits must be an int in 0..{MAX_SCALE_BITS},"
                             f" got {self.scale_bits!r}")
        if self.prg not in PRGS:
            raise InputError(f"SecAggConfig.prg must be one of {list(PRGS)}, got {self.prg!r}")
        if not finite_number(self.stage_timeout) or not self.stage_timeout > 0:
            raise InputError(f"SecAggConfig.stage_timeout must be a positive number of seconds,"
                             f" got {self.stage_timeout!r}")

    @property
    def client_wait(self) -> float:
        """Seconds a client waits for the server's next message: ``2 * stage_timeout``.

        The server may wait a whole ``stage_timeout`` for a silent client, counted from
        its own previous message, and only then works (relays shares, sums, unmasks) and
        answers; a client that waited ``stage_timeout`` too would give up first and fail
        the round that was meant to drop the silent client. The second ``stage_timeout``
        is the server's time to work. (Capped at the longest wait a lock can take.)
        """
        return min(2.0 * self.stage_timeout, threading.TIMEOUT_MAX)

    def threshold_for(self, n_clients: int) -> int:
        """The threshold t for a round with ``n_clients`` clients (checked against it)."""
        if n_clients < (2 if self.secure else 1):
            raise InputError(f"{'secure ' if self.secure else ''}aggregation needs at least"
                             f" {2 if self.secure else 1} clients, got {n_clients}")
        t = self.threshold if self.threshold is not None else n_clients // 2 + 1
        if t > n_clients:
            raise InputError(f"SecAggConfig.threshold={t} exceeds the {n_clients} clients")
        return t

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SecAggResult:
    """What the server learns from a round: the sum over the surviving clients, and who they were.

    ``wait_seconds`` is the time the server sat idle waiting for clients that never
    answered (dropout detection), so ``wall time - wait_seconds`` is the work.
    """

    vector: np.ndarray
    survivors: tuple[str, ...]
    dropped: tuple[str, ...]
    threshold: int
    secure: bool
    wait_seconds: float = 0.0
