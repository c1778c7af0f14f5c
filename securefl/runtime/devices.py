"""Picking the torch device, with a one-line error when the asked-for one is missing."""

from __future__ import annotations

import torch

from protocols.errors import InputError


def resolve_device(device: str | torch.device | None = "cpu") -> torch.device:
    """``"cpu"``, ``"cuda"`` or ``"cuda:N"`` as a torch.device; InputError if unavailable."""
    if device is None:
        return torch.device("cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"--device {device!r} is not a torch device: {exc}") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"--device {device}: CUDA is not available on this machine; use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise InputError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) present")
    elif resolved.type != "cpu":
        raise InputError(f"--device {device!r}: only cpu and cuda are supported")
    return resolved


class GPUPeak:
    """The most memory torch's tensors took on one CUDA device while a block ran.

    ``with GPUPeak(device) as peak: ...`` then ``peak.mib``: None on CPU (nothing to
    measure), else the peak in MiB since the block began. The counter is per process,
    so a measured block should be the only GPU work of its process at the time.
    """

    def __init__(self, device: str | torch.device | None) -> None:
        resolved = resolve_device(device)
        self._device = resolved if resolved.type == "cuda" else None
        self.mib: float | None = None

    @classmethod
    def of_run(cls, device: str | torch.device | None, backend: str) -> "GPUPeak":
        """For a run whose parties compute in this process; with another ``backend`` they are
        other processes, whose GPU memory this one cannot see, so nothing is measured here:
        each party process reports its own peak instead (``RunResult.gpu_peak_mib``)."""
        return cls(device if backend == "inprocess" else "cpu")

    def __enter__(self) -> "GPUPeak":
        if self._device is not None:
            torch.cuda.synchronize(self._device)
            torch.cuda.reset_peak_memory_stats(self._device)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._device is not None:
            torch.cuda.synchronize(self._device)
            self.mib = round(torch.cuda.max_memory_allocated(self._device) / 2**20, 1)

    def into(self, result: dict) -> dict:
        """``result`` with ``gpu_peak_mib`` added when there was a GPU to measure."""
        if self.mib is not None:
            result["gpu_peak_mib"] = self.mib
        return result
