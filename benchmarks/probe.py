"""How fast this machine does homomorphic work right now: a probe recorded beside HE timings.

HE-VFL's time follows the host's speed (the same 2-core VM has measured 0.9 to 2.4 ms
per rotation on different days), so every result that times it records this probe.
"""

from __future__ import annotations

import time


def seal_rotation_ms(count: int = 200) -> float:
    """Milliseconds per SEAL slot rotation with the packed CKKS parameters: a probe of how fast
    this machine is right now (the same 2-core VM has measured 1.05 to 1.4 ms on one day)."""
    from tenseal import sealapi

    from protocols.interactive.ckks_engine import PackedCKKSKey
    from protocols.interactive.ckks_evaluator import PackedEvaluator

    key = PackedCKKSKey.generate_packed()
    evaluator = PackedEvaluator(key.public_context())
    ct, out = evaluator.seal.zero(), sealapi.Ciphertext()
    start = time.perf_counter()
    for _ in range(count):
        evaluator.seal.evaluator.rotate_vector(ct, 32, evaluator.seal.galois, out)
    return (time.perf_counter() - start) / count * 1e3


__all__ = ["seal_rotation_ms"]
