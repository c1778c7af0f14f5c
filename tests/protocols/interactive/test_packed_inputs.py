"""What the packed evaluator accepts from the key owner: Galois keys it will need, inputs at the
input scale, and tensors holding as many ciphertexts as they declare (checked before SEAL loads them)."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import DecodeError, ProtocolError
from protocols.interactive.ckks_engine import PackedCKKSKey
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.packing import make_plan, pack_input
from protocols.interactive.sealwire import _tensor_proto, ciphertext_bytes, ciphertexts_fields, ciphertexts_from_fields


@pytest.fixture(scope="module")
def key() -> PackedCKKSKey:
    return PackedCKKSKey.generate_packed(workers=1)


def test_a_context_without_every_left_rotation_key_is_refused_at_set_up(monkeypatch):
    # Arrange: a key owner that made the rotate-by-1 key only
    from protocols.he import ckks_wire as ckks

    every = ckks.left_rotation_elements
    monkeypatch.setattr(ckks, "left_rotation_elements", lambda n: every(n)[:1])
    partial = PackedCKKSKey.generate_packed(workers=1).public_context()
    monkeypatch.setattr(ckks, "left_rotation_elements", every)
    # Act / Assert: at set-up, not as SEAL's raw "Galois key not present" in the first product
    with pytest.raises(ProtocolError, match="lacks Galois keys"):
        PackedEvaluator(partial)


@pytest.mark.parametrize("scale_bits", [40, 60])
def test_inputs_at_another_scale_are_a_decode_error(key, scale_bits):
    # Arrange
    public = key.public_context()
    plan = make_plan(public.config.slots, 4, 3, 2)
    cts = key.encrypt_slots(pack_input(np.ones((4, 3)), plan), 2.0 ** scale_bits, seeded=True)
    # Act / Assert
    with pytest.raises(DecodeError, match="not at scale 2\\^50"):
        PackedEvaluator(public).load(ciphertexts_fields(public, cts, bound_exp=0), plan)


def test_a_tensor_with_more_ciphertexts_than_declared_is_refused_before_loading(key):
    # Arrange: one real ciphertext's bytes repeated 500 times under fields that declare one
    public = key.public_context()
    cts = key.encrypt_slots(np.zeros((1, public.config.slots)), 2.0 ** 50)
    fields = ciphertexts_fields(public, cts, bound_exp=0)
    fields["tensor"] = _tensor_proto([ciphertext_bytes(cts[0])] * 500, 2.0 ** 50, public.config.slots)
    # Act / Assert
    with pytest.raises(DecodeError, match="one ciphertext per declared entry"):
        ciphertexts_from_fields(public, fields, 1)
