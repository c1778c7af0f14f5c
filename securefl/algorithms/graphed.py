"""Training steps replayed as CUDA graphs: one launch a step instead of some forty.

STFL's networks and the plaintext baselines have a few thousand weights and train
at batch 128, so on a GPU a step's time goes on launching its kernels from Python,
not on running them: profiled on an H200 whose host is a 16-core Xeon, a step of
the payment classifier took 1.76 ms, of which the GPU was busy 0.11 ms. Here the
whole step (gather the batch, forward, backward, Adam) is captured once per batch
size and replayed for every batch.

Only the batch's positions and, for the VAE, its noise are written before each
replay, eagerly and in the eager loop's order, so the run draws the same random
numbers as :func:`securefl.algorithms.training.fit` does without graphs. Adam runs
with ``capturable=True``, whose bias correction is computed on the device and may
round differently in the last bits.

Status: the default on a CUDA device (``TrainConfig.cuda_graphs``; ``--no-cuda-graphs``
runs the eager loop). On an H100 with a 16-core Xeon (2026-11-26), each run alone, 3
seeds (benchmarks/results/stfl_cuda_alone_*.md), STFL end to end took 0.4 s graphed
against 1.1 s eager on cancer and 5.6 s against 41.1 s on payment; on an H200 every
test of tests/securefl/algorithms/test_graphed.py passed, two threads capturing at once
(serialised by a lock) included.

What it costs, first, the last digits: capturable Adam rounds differently from the
eager loop and the difference grows over thousands of steps, so a 100-epoch run's
accuracy can differ from the eager one's in the third digit (payment seed 0: 79.52%
against 79.33%). Second, GPU memory: a run's first cell in a fresh process peaked at
about 490 MiB allocated (eager: about 100 MiB), and each graphed run left about 390 MiB
allocated after it ended, so one process's per-cell peaks grew 487, 877, 1267 MiB and
levelled off near 2.2 GiB. A likely cause, not yet checked on a GPU: torch keeps a
cuBLAS workspace for every (cuBLAS handle, stream) pair until the process ends, and
each fit here takes three new streams from torch's pool of 32 (the warm-up's and one
per captured batch size), six a run, which the pool's size would bound. The fix to
try: warm up and capture on one stream per device, reused under ``_ONE_CAPTURE``.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

import torch
from torch import nn

LossFn = Callable[..., torch.Tensor]
WARMUP_STEPS = 3  # eager steps on a side stream before capture, as torch's CUDA graph notes ask
# torch allows one capture at a time in a process, and STFL's parties train in threads of
# one process: two captures at once failed on an H200 (cudaErrorIllegalState at
# capture_begin, on torch.cuda.graph's shared default capture stream).
_ONE_CAPTURE = threading.Lock()


class _Step:
    """One batch size's captured step: write ``rows`` (and ``noise``), then ``replay``."""

    def __init__(self, size: int, noise_width: int, device: torch.device) -> None:
        self.rows = torch.arange(size, device=device)  # valid positions for the warm-up steps
        self.noise = torch.zeros((size, noise_width), device=device) if noise_width else None
        self.graph = torch.cuda.CUDAGraph()
        self.loss = torch.zeros((), device=device)

    def run(self, model_loss: LossFn, tensors: Sequence[torch.Tensor], optimizer: torch.optim.Optimizer
            ) -> torch.Tensor:
        batch = [t[self.rows] for t in tensors] + ([self.noise] if self.noise is not None else [])
        loss = model_loss(*batch)
        loss.backward()
        optimizer.step()
        return loss.detach()


class GraphedSteps:
    """Adam on ``loss_fn`` over batches of ``tensors``, each step a CUDA graph replay.

    Building it warms up and captures a graph per batch size (``batch_size`` and the
    last, smaller batch), then restores the weights, the optimizer state and
    ``generator`` to where they were, so the warm-up leaves no trace on the run.
    """

    def __init__(self, model: nn.Module, loss_fn: LossFn, tensors: Sequence[torch.Tensor], *, lr: float,
                 batch_size: int, generator: torch.Generator, noise_width: int = 0) -> None:
        n, device = int(tensors[0].shape[0]), tensors[0].device
        self.loss_fn, self.tensors, self.generator = loss_fn, tuple(tensors), generator
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr, capturable=True)
        sizes = sorted({min(batch_size, n), n % batch_size} - {0}, reverse=True)
        self.steps = {size: _Step(size, noise_width, device) for size in sizes}
        with _ONE_CAPTURE:
            self._capture([p for p in model.parameters() if p.requires_grad])

    def _capture(self, params: list[nn.Parameter]) -> None:
        saved = [p.detach().clone() for p in params]
        rng = self.generator.get_state()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for step in self.steps.values():
                for _ in range(WARMUP_STEPS):
                    self._draw_noise(step)
                    self.optimizer.zero_grad(set_to_none=True)
                    step.run(self.loss_fn, self.tensors, self.optimizer)
        torch.cuda.current_stream().wait_stream(side)
        with torch.no_grad():  # undo the warm-up: same tensors, their first values
            for p, value in zip(params, saved):
                p.copy_(value)
            for state in self.optimizer.state.values():
                for value in state.values():
                    if torch.is_tensor(value):
                        value.zero_()
        self.generator.set_state(rng)
        for step in self.steps.values():
            self.optimizer.zero_grad(set_to_none=True)
            # thread-local, on a stream of its own: another party's ordinary CUDA work in
            # another thread must not break (or be caught in) this capture
            with torch.cuda.graph(step.graph, stream=torch.cuda.Stream(), capture_error_mode="thread_local"):
                step.loss = step.run(self.loss_fn, self.tensors, self.optimizer)

    def _draw_noise(self, step: _Step) -> None:
        if step.noise is not None:  # as torch.randn(shape, generator=...) would in the eager loop
            step.noise.normal_(generator=self.generator)

    def step(self, rows: torch.Tensor) -> torch.Tensor:
        """Train on the rows at positions ``rows``; the batch's loss (on the device, not synced)."""
        step = self.steps[int(rows.shape[0])]
        step.rows.copy_(rows)
        self._draw_noise(step)
        step.graph.replay()
        return step.loss


__all__ = ["GraphedSteps", "WARMUP_STEPS"]
