"""TenSEAL's wire formats, read and written without loading them: the public context with
SEAL's seeded, left-only Galois keys appended, and a peer's tensor counted before SEAL
expands it. TenSEAL's messages are protobuf (``tensealcontext.proto``); only their
top-level fields are walked here, with every length checked.
"""

from __future__ import annotations

from typing import Iterator

import tenseal as ts
from tenseal import sealapi

from protocols.errors import DecodeError, InputError
from protocols.he.sealfile import seal_bytes, varint

_PUBLIC_FIELD, _GALOIS_FIELD = 2, 5
"""TenSEALContextProto's public part and, within it, TenSEALPublicProto's Galois keys."""


def left_rotation_elements(poly_modulus_degree: int) -> list[int]:
    """SEAL's Galois elements for rotating a CKKS slot vector left by 1, 2, 4, ... slots / 2.

    A left rotation by k is the automorphism x -> x^(3^k mod 2N) (SEAL's
    ``GaloisTool::get_elt_from_step``). Every rotation this project makes is a left
    one, by a power of two or by a sum of them done one power at a time (TenSEAL's own
    sums too), so right rotations and the complex conjugation need no keys.
    """
    slots = poly_modulus_degree // 2
    return [pow(3, 1 << i, 2 * poly_modulus_degree) for i in range(slots.bit_length() - 1)]


def public_bytes(context: ts.Context, galois: bool) -> bytes:
    """TenSEAL's public serialisation of ``context``, with Galois keys if ``galois``.

    SEAL makes those here, for left rotations only (:func:`left_rotation_elements`:
    12 keys at N = 8192, where TenSEAL makes 24, every power of two both ways), and
    serialises them seeded: each key's uniform half travels as the
    seed it is expanded from. With the packed engine's parameters the public context
    takes 5.9 MB with them (10.6 MB with both ways' keys, 20.1 MB as TenSEAL made
    them). The receiver's TenSEAL load (SEAL's) expands them again.
    """
    data = context.serialize(save_public_key=True, save_secret_key=False, save_galois_keys=False,
                             save_relin_keys=True)
    if not galois:
        return data
    degree = context.seal_context().data.key_context_data().parms().poly_modulus_degree()
    keys = seal_bytes(sealapi.KeyGenerator(context.seal_context().data, context.secret_key().data)
                      .create_galois_keys(left_rotation_elements(degree)))
    return appended(data, _PUBLIC_FIELD, varint(_GALOIS_FIELD << 3 | 2) + varint(len(keys)) + keys)


def _fields(proto: bytes) -> Iterator[tuple[int, int | memoryview]]:
    """A protobuf message's top-level fields as (key, value): an int for a varint, a view of the bytes
    of a length-delimited or fixed-width one (no copy: a tensor's are its ciphertexts). InputError for a
    truncated message or an unknown wire type."""
    view, pos = memoryview(proto), 0
    while pos < len(proto):
        key, pos = _read_varint(proto, pos)
        kind = key & 7
        if kind == 0:
            value, pos = _read_varint(proto, pos)
            yield key, value
            continue
        if kind == 2:
            size, pos = _read_varint(proto, pos)
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
        else:
            raise InputError("not a protobuf message this project reads")
        if pos + size > len(proto):
            raise InputError("a truncated protobuf message")
        yield key, view[pos:pos + size]
        pos += size


def appended(proto: bytes, number: int, extra: bytes) -> bytes:
    """``proto`` with ``extra`` appended to its length-delimited field ``number`` (field numbers:
    TenSEAL's ``tensealcontext.proto``; its messages hold varint and length-delimited fields only)."""
    out = bytearray()
    try:
        for key, value in _fields(proto):
            if isinstance(value, int):  # a varint field (encryption_type): as it is
                out += varint(key) + varint(value)
                continue
            if key & 7 != 2:
                raise InputError("a fixed-width field")
            body = bytes(value) + (extra if key >> 3 == number else b"")
            out += varint(key) + varint(len(body)) + body
    except InputError:
        raise InputError("TenSEAL's context serialisation is not in the expected format") from None
    return bytes(out)


def ciphertext_count(tensor: bytes) -> int:
    """How many ciphertexts (field 2) a serialised CKKSTensorProto holds, read without loading
    it: SEAL's load expands each compressed blob (a few hundred bytes can claim 260 KB), so a
    peer's tensor is counted first. DecodeError if it is not a protobuf message."""
    try:
        return sum(key == (2 << 3 | 2) for key, _ in _fields(tensor))
    except InputError:
        raise DecodeError("malformed CKKS tensor") from None


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        value, pos, shift = value | (byte & 0x7F) << shift, pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos
    raise InputError("a truncated protobuf varint")


__all__ = ["appended", "ciphertext_count", "left_rotation_elements", "public_bytes"]
