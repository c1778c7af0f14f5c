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
