"""The safe wire codec: a typed JSON header followed by raw array bytes.

Nothing a peer sends is ever unpickled or evaluated. A frame is::

    b"SFL1" | uint32 LE header length | UTF-8 JSON header | payload bytes

The header names the sender, the receiver, the tag and every field. A field is
either a numpy array (dtype from a fixed whitelist, explicit shape, little-endian),
raw ``bytes``, or a small JSON value (``None``, bool, int, float, str, or lists and
string-keyed dicts of those). Array and bytes fields lie back to back in the payload,
in the header's order, and fill it exactly, so a frame decodes into no more memory
than it holds. Decoding checks every length, offset and dtype and raises
:class:`~protocols.errors.DecodeError` on anything malformed.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from protocols.errors import DecodeError, InputError

MAGIC = b"SFL1"
VERSION = 1
MAX_HEADER_BYTES = 1 << 20
MAX_DIMS = 32  # numpy's limit is 64; no message here has more than a few
MAX_JSON_DEPTH = 8
MAX_ROUND = 2**64 - 1  # crypto.transcript packs integers as 64-bit words
_PREFIX = struct.Struct("<4sI")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: the only way a header's str can hold one."""

# dtype name on the wire -> numpy dtype (always little-endian on the wire)
_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(name).newbyteorder("<")
    for name in ("bool", "uint8", "int8", "int16", "uint16", "int32", "uint32",
                 "int64", "uint64", "float16", "float32", "float64")
}
_JSON_SCALARS = (type(None), bool, int, float, str)


@dataclass(frozen=True, order=True)
class Tag:
    """What a message is: the round it belongs to, the protocol stage and a name.

    Tags are compared exactly on receipt, so a message can never be mistaken for
    another stage's or another round's.
    """

    round: int
    stage: str
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.round, int) or isinstance(self.round, bool) or not 0 <= self.round <= MAX_ROUND:
            # the bound is the 64-bit field that key derivations bind the round into
            raise InputError(f"round must be an int in 0..2^64-1, got {self.round!r}")
        for attr in ("stage", "name"):
            value = getattr(self, attr)
            if not isinstance(value, str) or "/" in value:
                raise InputError(f"Tag.{attr} must be a str without '/', got {value!r}")
        if not self.stage:
            raise InputError("Tag.stage must not be empty")

    def __str__(self) -> str:
        return f"r{self.round}/{self.stage}/{self.name}"

    def to_json(self) -> list:
        return [self.round, self.stage, self.name]

    @classmethod
    def from_json(cls, value: Any) -> "Tag":
        if not (isinstance(value, list) and len(value) == 3):
            raise DecodeError(f"malformed tag in header: {value!r}")
        try:
            return cls(*value)
        except InputError as exc:
            raise DecodeError(f"malformed tag in header: {exc}") from None


def check_tag(tag: Any) -> Tag:
    """``tag`` if it is a :class:`Tag`; else InputError (a str would fail later, and obscurely)."""
    if not isinstance(tag, Tag):
        raise InputError(f"tag must be a protocols.codec.Tag, got {type(tag).__name__} {tag!r}")
    return tag


@dataclass(frozen=True)
class Message:
    """A decoded message: who sent it to whom, its tag, and its named fields."""

    src: str
    dst: str
    tag: Tag
    fields: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        try:
            return self.fields[name]
        except KeyError:
            raise DecodeError(
                f"message {self.tag} from {self.src!r} has no field {name!r}"
                f" (fields: {sorted(self.fields)})") from None


def _check_json_value(value: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        raise InputError(f"field {where!r} is nested too deeply to encode")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"field {where!r} holds a non-finite float; send it as an array")
    if isinstance(value, _JSON_SCALARS):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_json_value(item, where, depth + 1)
        return
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        for item in value.values():
            _check_json_value(item, where, depth + 1)
        return
    raise InputError(f"field {where!r} has type {type(value).__name__}, which the codec does not carry")


def encode(src: str, dst: str, tag: Tag, fields: Mapping[str, Any]) -> bytes:
    """Encode one message into a frame. Arrays are sent as raw little-endian bytes."""
    specs: list[dict] = []
    chunks: list[bytes | memoryview] = []
    offset = 0
    for name, value in fields.items():
        if not isinstance(name, str):
            raise InputError(f"field names must be str, got {name!r}")
        if isinstance(value, np.ma.MaskedArray):  # its raw data, the masked entries too, would be sent
            raise InputError(f"field {name!r}: a masked array would send the values it masks; send"
                             " .filled(value) or .compressed() instead")
        if isinstance(value, np.ndarray):
            wire = _DTYPES.get(value.dtype.name)
            if wire is None:
                raise InputError(f"field {name!r}: dtype {value.dtype} is not carried by the codec")
            data = np.ascontiguousarray(value, dtype=wire)
            spec = {"name": name, "kind": "array", "dtype": value.dtype.name,
                    "shape": list(value.shape), "offset": offset, "nbytes": data.nbytes}
            chunks.append(memoryview(data).cast("B") if data.nbytes else b"")
            offset += data.nbytes
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            spec = {"name": name, "kind": "bytes", "offset": offset, "nbytes": len(raw)}
            chunks.append(raw)
            offset += len(raw)
        else:
            _check_json_value(value, name)
            spec = {"name": name, "kind": "json", "value": value}
        specs.append(spec)
    try:
        header = json.dumps({"v": VERSION, "src": src, "dst": dst, "tag": tag.to_json(),
                             "fields": specs}, separators=(",", ":"), allow_nan=False).encode()
    except ValueError as exc:  # an int over Python's digit limit for str(); a peer's decoder would refuse it
        raise InputError(f"message {tag}: a field cannot be encoded as JSON ({str(exc)[:120]});"
                         " send large numbers as arrays or bytes") from None
    if len(header) > MAX_HEADER_BYTES:
        raise InputError(f"message header is {len(header)} bytes, over the {MAX_HEADER_BYTES} limit;"
                         " send large values as arrays")
    return b"".join([_PREFIX.pack(MAGIC, len(header)), header, *chunks])


def decode_header(frame: bytes | memoryview) -> tuple[dict, int]:
    """Parse and validate a frame's header; return it and where the payload starts."""
    view = memoryview(frame)
    if len(view) < _PREFIX.size:
        raise DecodeError(f"frame of {len(view)} bytes is too short")
    magic, hlen = _PREFIX.unpack_from(view)
    if magic != MAGIC:
        raise DecodeError("frame does not start with the securefl magic bytes")
    if hlen > MAX_HEADER_BYTES or _PREFIX.size + hlen > len(view):
        raise DecodeError(f"frame header length {hlen} is out of range")
    try:
        raw = bytes(view[_PREFIX.size:_PREFIX.size + hlen])
        header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, an int over Python's digit limit, deep nesting
        raise DecodeError(f"frame header is not valid JSON: {str(exc)[:200]}") from None
    if _SURROGATE_ESCAPE.search(raw):  # a lone surrogate decodes to a str that cannot be encoded again
        try:
            json.dumps(header, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise DecodeError("frame header holds a string with a lone UTF-16 surrogate") from None
    if not isinstance(header, dict) or header.get("v") != VERSION:
        raise DecodeError("frame header has no supported version")
    if not isinstance(header.get("src"), str) or not isinstance(header.get("dst"), str):
        raise DecodeError("frame header lacks src/dst")
    if not isinstance(header.get("fields"), list):
        raise DecodeError("frame header lacks a field list")
    return header, _PREFIX.size + hlen


def _no_constant(name: str) -> Any:
    """json.loads hook: NaN and Infinity, which :func:`encode` never writes, are malformed."""
    raise ValueError(f"{name} is not carried by the codec")


def _decode_json(name: str, value: Any) -> Any:
    try:
        _check_json_value(value, name)
    except InputError as exc:
        raise DecodeError(f"field {name!r}: {exc}") from None
    return value


def _decode_field(spec: Any, payload: memoryview, start: int) -> tuple[str, Any, int]:
    """One field, and where the next byte field must start. Byte fields lie back to back from
    ``start``, as :func:`encode` writes them, so no two share bytes and decoding a frame never
    allocates more than the frame holds (overlapping fields would each be copied)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise DecodeError(f"malformed field spec: {str(spec)[:200]}")
    name, kind = spec["name"], spec.get("kind")
    if kind == "json":
        return name, _decode_json(name, spec.get("value")), start
    offset, nbytes = spec.get("offset"), spec.get("nbytes")
    if not (isinstance(offset, int) and isinstance(nbytes, int) and offset == start
            and 0 <= nbytes and offset + nbytes <= len(payload)):
        raise DecodeError(f"field {name!r}: offset/length out of range (it must start at byte {start})")
    return (*_decode_bytes(name, kind, spec, payload[offset:offset + nbytes]), offset + nbytes)


def _decode_bytes(name: str, kind: Any, spec: dict, raw: memoryview) -> tuple[str, Any]:
    """A bytes or array field from its own ``raw`` bytes."""
    nbytes = len(raw)
    if kind == "bytes":
        return name, bytes(raw)
    if kind != "array":
        raise DecodeError(f"field {name!r}: unknown kind {kind!r}")
    wire_name, shape = spec.get("dtype"), spec.get("shape")
    dtype = _DTYPES.get(wire_name) if isinstance(wire_name, str) else None
    if dtype is None:
        raise DecodeError(f"field {name!r}: dtype {str(wire_name)[:40]!r} is not allowed")
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMS
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise DecodeError(f"field {name!r}: malformed shape {str(shape)[:80]}")
    if math.prod(shape) * dtype.itemsize != nbytes:
        raise DecodeError(f"field {name!r}: {nbytes} bytes do not fit shape {str(shape)[:80]} of {dtype.name}")
    try:  # a zero dimension beside dimensions numpy cannot index passes the size check
        array = np.frombuffer(raw, dtype=dtype).reshape(shape)
    except ValueError:
        raise DecodeError(f"field {name!r}: numpy cannot hold shape {str(shape)[:80]}") from None
    return name, array.astype(dtype.newbyteorder("="), copy=True)


def decode(frame: bytes | memoryview) -> Message:
    """Decode a frame into a :class:`Message`, validating everything."""
    header, start = decode_header(frame)
    payload = memoryview(frame)[start:]
    fields: dict[str, Any] = {}
    end = 0
    for spec in header["fields"]:
        name, value, end = _decode_field(spec, payload, end)
        if name in fields:
            raise DecodeError(f"field {name!r} appears twice")
        fields[name] = value
    if end != len(payload):
        raise DecodeError(f"frame carries {len(payload) - end} bytes that no field accounts for")
    return Message(src=header["src"], dst=header["dst"], tag=Tag.from_json(header.get("tag")),
                   fields=fields)
