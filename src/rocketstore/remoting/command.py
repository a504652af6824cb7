"""The remoting command value: one request or response as it travels in a frame.

Owns :class:`RemotingCommand` and the rules for building requests and responses (flag bits, opaque echo,
which serialize type a response uses).  Turning commands into bytes is codec.py's job.  Pure: no I/O, no
clocks, no counters -- the connection assigns `opaque`.  Imports only remoting.codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketstore.remoting.codes import MQ_VERSION, LanguageCode, SerializeType

__all__ = ["ONEWAY_FLAG", "RESPONSE_FLAG", "RemotingCommand", "new_command"]

RESPONSE_FLAG = 0x1
ONEWAY_FLAG = 0x2


@dataclass(frozen=True, slots=True)
class RemotingCommand:
    """One remoting command.  Immutable and therefore safe to share between threads.

    `code` is a plain int: a peer may send codes this package has no name for, and a request code and a
    response code with the same number mean different things (205).  `ext_fields` holds the custom header
    as strings, the way Java keeps it; typed views of it live in headers.py.  `ext_fields` is left out of
    the hash (a dict cannot be hashed) but takes part in equality.
    """

    code: int
    language: LanguageCode = LanguageCode.JAVA
    version: int = MQ_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict, hash=False)
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        opaque: int = 0,
        oneway: bool = False,
        remark: str | None = None,
        language: LanguageCode = LanguageCode.JAVA,
        version: int = MQ_VERSION,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """A request; `opaque` is normally filled in later by the connection (see :meth:`with_opaque`)."""
        if cls is not RemotingCommand:
            return cls(code, language, version, opaque, ONEWAY_FLAG if oneway else 0, remark,
                       dict(ext_fields) if ext_fields else {}, body, serialize_type)
        return new_command(code, language, version, opaque, ONEWAY_FLAG if oneway else 0, remark,
                           dict(ext_fields) if ext_fields else {}, body, serialize_type)

    @classmethod
    def response(
        cls,
        code: int,
        opaque: int,
        *,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """A response to the request numbered `opaque`, announced as Java 4.9.3 announces itself."""
        return cls(
            code=code,
            language=LanguageCode.JAVA,
            version=MQ_VERSION,
            opaque=opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            ext_fields=dict(ext_fields) if ext_fields else {},
            body=body,
            serialize_type=serialize_type,
        )

    def make_response(
        self,
        code: int,
        *,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        preferred_serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """The response to this request: same opaque, response flag set.

        The header is JSON unless the server prefers ROCKETMQ *and* this request came in binary: C++ and
        ali-ons clients send JSON and read the header-length word unmasked, so a binary answer would be
        unreadable to them.  A Java server likewise answers in its own configured type, JSON by default.
        """
        if self.serialize_type == SerializeType.JSON:
            serialize_type = SerializeType.JSON
        else:
            serialize_type = preferred_serialize_type
        return new_command(code, LanguageCode.JAVA, MQ_VERSION, self.opaque, RESPONSE_FLAG, remark,
                           dict(ext_fields) if ext_fields else {}, body, serialize_type)

    def with_opaque(self, opaque: int) -> RemotingCommand:
        """A copy carrying the request id the connection assigned."""
        return new_command(self.code, self.language, self.version, opaque, self.flag, self.remark,
                           self.ext_fields, self.body, self.serialize_type)


class _CommandSlots:
    """RemotingCommand's slots without its frozen ``__setattr__``: new_command fills one with plain attribute
    stores and then sets its ``__class__`` to RemotingCommand, which CPython allows because the two slot
    layouts (and bases) are the same; the result is an ordinary RemotingCommand (equal, hashable and frozen
    like any other).  About 3x cheaper than a slot-descriptor call per field."""

    __slots__ = RemotingCommand.__slots__


def new_command(code: int, language: LanguageCode, version: int, opaque: int, flag: int, remark: str | None,
                ext_fields: dict[str, str], body: bytes, serialize_type: SerializeType) -> RemotingCommand:
    """``RemotingCommand(...)`` with every field given positionally, for the per-frame paths (the codec's
    decoder, responses): it fills the slots directly (see :class:`_CommandSlots`), a fraction of the cost of
    the frozen dataclass's generated ``__init__`` (which goes through ``object.__setattr__`` by name).
    `ext_fields` is taken as it is, not copied: pass a dict nobody else changes."""
    command: Any = _new(_CommandSlots)
    command.code = code
    command.language = language
    command.version = version
    command.opaque = opaque
    command.flag = flag
    command.remark = remark
    command.ext_fields = ext_fields
    command.body = body
    command.serialize_type = serialize_type
    command.__class__ = RemotingCommand
    return command  # type: ignore[no-any-return]


_new = object.__new__
if RemotingCommand.__slots__ != ("code", "language", "version", "opaque", "flag", "remark", "ext_fields", "body",
                                 "serialize_type"):  # new_command must set every field
    raise AssertionError(f"RemotingCommand fields changed: {RemotingCommand.__slots__}")
