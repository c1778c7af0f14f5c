"""A transport that rewrites one of its own outgoing messages: a buggy or misbehaving peer."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from protocols.codec import Tag
from protocols.transport import Transport


class Rewriting:
    """``transport``, except that its message named ``message`` goes out as ``edit(fields)``."""

    def __init__(self, transport: Transport, message: str, edit: Callable[[dict], dict]) -> None:
        self.transport, self.message, self.edit = transport, message, edit  # not .name: the transport's

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.transport, attr)

    def send(self, dst: str, tag: Tag, fields: Mapping[str, Any] | None = None, /, **more: Any) -> int:
        fields = {**(fields or {}), **more}
        return self.transport.send(dst, tag, self.edit(dict(fields)) if tag.name == self.message else fields)
