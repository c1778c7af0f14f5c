"""Load, before a run's clock starts, what the run would otherwise load inside it.

torch imports its compiler stack (``torch._dynamo``) the first time any optimizer is
constructed: about 2 s on this project's 2-core machine, counted as its own by the
first timed run of a process. ``securefl run centralized --dataset breast`` reported
3.55 s, of which training took well under one (the rest was this and the import of
``sklearn.metrics``, which the metrics no longer need). ``securefl run`` with every
party in one process, the demo and every benchmark call :func:`preload` before their
first run, and a benchmark's worker processes call it when they start (with the
benchmark's device: a spawned worker starts without CUDA). A party run alone
(``--role``) does not: some never train (a horizontal server, a TDCD hub), and each
party's time also holds its waits for the others.
"""

from __future__ import annotations


def preload(device: str | None = None) -> None:
    """Construct a throwaway torch optimizer, so that the first real one costs what later ones do.

    On a CUDA ``device`` also run a small product and its backward pass there: the
    process's CUDA context and cuBLAS handle are made by the first such work, which a
    fresh process (a benchmark's spawned worker) would otherwise count in its first run.
    """
    import torch

    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    if device is not None and torch.device(device).type == "cuda":
        x = torch.ones(8, 8, device=device, requires_grad=True)
        (x @ x).sum().backward()
        torch.cuda.synchronize(device)


__all__ = ["preload"]
