"""Fixtures for the securefl tests: a GPU that exists only as torch.cuda's counters."""

from __future__ import annotations

import pytest
import torch

FAKE_PEAK_MIB = 3.0


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> float:
    """Make ``cuda`` look available with an allocator whose peak is always
    :data:`FAKE_PEAK_MIB`; returns that peak. No tensor may be put on the device."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for name in ("synchronize", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, lambda *a: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: FAKE_PEAK_MIB * 2**20)
    return FAKE_PEAK_MIB
