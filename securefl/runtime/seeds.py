"""Seeds for *learning* randomness (splits, initialisation, batch order) -- never for crypto.

Every run derives independent streams from one user-given seed, so a run is
reproducible and two purposes never share a stream. Key material, masks and PSI
scalars come from the OS and are never derived from these.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from protocols.errors import InputError


@dataclass(frozen=True)
class SeedPlan:
    """Derives named, independent seeds from one run seed."""

    seed: int

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise InputError(f"seed must be a non-negative int below 2**63, got {self.seed!r}")

    def derive(self, purpose: str) -> int:
        """A 63-bit seed for ``purpose`` (e.g. "split", "init:active", "batches")."""
        digest = hashlib.sha256(f"securefl/seed/{self.seed}/{purpose}".encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def numpy(self, purpose: str) -> np.random.Generator:
        return np.random.default_rng(self.derive(purpose))

    def torch(self, purpose: str) -> torch.Generator:
        gen = torch.Generator()
        gen.manual_seed(self.derive(purpose))
        return gen
