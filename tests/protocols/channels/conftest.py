"""Fixtures: record every secret the channel and secure-aggregation code generate or derive."""

from __future__ import annotations

import threading

import pytest

from protocols.channels import crypto


class SecretRecorder:
    """Collects private keys, random seeds and HKDF outputs (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.private_keys: list[bytes] = []
        self.seeds: list[bytes] = []
        self.derived: list[bytes] = []

    def add(self, kind: list[bytes], value: bytes) -> None:
        with self._lock:
            kind.append(value)

    @property
    def all(self) -> list[bytes]:
        with self._lock:
            return self.private_keys + self.seeds + self.derived


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> SecretRecorder:
    """Wrap crypto.new_private_key / new_seed / hkdf_sha256 to remember what they return."""
    rec = SecretRecorder()
    new_private_key, new_seed, hkdf = crypto.new_private_key, crypto.new_seed, crypto.hkdf_sha256

    def recording_key():
        key = new_private_key()
        rec.add(rec.private_keys, crypto.private_bytes(key))
        return key

    def recording_seed():
        seed = new_seed()
        rec.add(rec.seeds, seed)
        return seed

    def recording_hkdf(ikm, **kwargs):
        out = hkdf(ikm, **kwargs)
        rec.add(rec.derived, out)
        rec.add(rec.derived, ikm)
        return out

    monkeypatch.setattr(crypto, "new_private_key", recording_key)
    monkeypatch.setattr(crypto, "new_seed", recording_seed)
    monkeypatch.setattr(crypto, "hkdf_sha256", recording_hkdf)
    return rec
