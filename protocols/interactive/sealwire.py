"""Raw SEAL ciphertexts of a CKKS public context, in and out of the CKKSArray wire format.

The packed engine works on SEAL ciphertexts directly (TenSEAL's ``sealapi``) because
:class:`~protocols.he.CKKSArray` exposes no slot rotations. To travel and to be
decrypted through the key owner's ordinary ``decrypt``, a list of ciphertexts is
wrapped as a batched CKKSArray of shape ``(slots, count)``: the same fields
``CKKSArray.to_fields`` writes, with the tensor in TenSEAL's protobuf format
(field 1 shape, 2 ciphertexts, 3 scale, 4 batch size). The receiver loads it with
``public.array_from_fields``, which validates the key, shape and level.

SEAL's Python binding serialises a ciphertext only to a file, so ``ciphertext_bytes``
goes through :mod:`protocols.he.sealfile`'s private scratch file; it holds
ciphertexts only, never key material.
"""

from __future__ import annotations

import struct
from typing import Any, Mapping, Sequence

from protocols.errors import DecodeError, InputError
from protocols.he import CKKSPublicContext
from protocols.he.sealfile import seal_bytes, seal_load, varint


def ciphertext_bytes(ciphertext: Any) -> bytes:
    """SEAL's serialisation of one ciphertext (compressed as SEAL chooses).

    Also takes the ``Serializable`` that SEAL's secret-key encryption returns, whose
    serialisation is seeded: ``c1`` travels as the seed it was drawn from, half the bytes.
    """
    return seal_bytes(ciphertext)


def ciphertext_from_bytes(public: CKKSPublicContext, blob: bytes) -> Any:
    """A ciphertext of ``public``'s parameters from :func:`ciphertext_bytes` (SEAL checks it).

    For the evaluator's own processes; what a peer sends travels as CKKSArray fields.
    """
    from tenseal import sealapi

    try:
        return seal_load(sealapi.Ciphertext(), public.tenseal_context.seal_context().data, blob)
    except (RuntimeError, ValueError) as err:
        raise DecodeError("not a ciphertext of this context") from err


def _tensor_proto(blobs: Sequence[bytes], scale: float, batch: int) -> bytes:
    """TenSEAL's CKKSTensorProto for a batched tensor of ``len(blobs)`` ciphertexts."""
    shape = varint(len(blobs))
    parts = [b"\x0a", varint(len(shape)), shape]
    for blob in blobs:
        parts += [b"\x12", varint(len(blob)), blob]
    parts += [b"\x19", struct.pack("<d", scale), b"\x20", varint(batch)]
    return b"".join(parts)


def ciphertexts_fields(public: CKKSPublicContext, ciphertexts: Sequence[Any], *,
                       bound_exp: int) -> dict[str, Any]:
    """CKKSArray fields of batched shape (slots, len(ciphertexts)) for ciphertexts at the top level
    (SEAL ciphertexts, or the seeded ``Serializable`` of secret-key encryptions).

    ``bound_exp`` is the public bound 2^bound_exp on every decoded lane.
    """
    if not ciphertexts:
        raise InputError("need at least one ciphertext")
    slots = public.config.slots
    blobs = [ciphertext_bytes(ct) for ct in ciphertexts]
    return {"scheme": "ckks", "key_id": public.key_id, "shape": [slots, len(blobs)],
            "layout": "batched", "lane_count": slots, "level": 0, "bound_exp": int(bound_exp),
            "tensor": _tensor_proto(blobs, 2.0 ** public.config.scale_bits, slots)}


def ciphertexts_from_fields(public: CKKSPublicContext, fields: Mapping[str, Any],
                            count: int) -> list[Any]:
    """The raw ciphertexts of validated CKKSArray fields; DecodeError unless ``count`` at level 0."""
    array = public.array_from_fields(fields)
    if array.shape != (public.config.slots, count) or array.level != 0:
        raise DecodeError(f"expected {count} packed ciphertexts at level 0, got shape "
                          f"{list(array.shape)} at level {array.level}")
    return list(array.tensor.ciphertext())


def prefixed(prefix: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with every name prefixed ``prefix.`` (several arrays in one message)."""
    return {f"{prefix}.{name}": value for name, value in fields.items()}


def unprefixed(prefix: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``fields`` named ``prefix.*``, without the prefix."""
    head = f"{prefix}."
    out = {name[len(head):]: value for name, value in fields.items() if name.startswith(head)}
    if not out:
        raise DecodeError(f"message has no fields {head}*")
    return out


__all__ = ["ciphertext_bytes", "ciphertext_from_bytes", "ciphertexts_fields", "ciphertexts_from_fields",
           "prefixed", "unprefixed"]
