"""The field-table machinery of the typed custom headers: how a header's `extFields` are read and written.

Owns :class:`CommandHeader` (the base of every header), the Java parsing rules for field values (int via
Integer.parseInt, long via Long.parseLong, boolean via Boolean.parseBoolean: only a case-insensitive "true"
is true; strings verbatim), the per-class field tables built from each dataclass field's wire name and kind
(``_req`` / ``_opt``), the one-letter names of SendMessageRequestHeaderV2, and :class:`HeaderFieldError`
for a missing required field (`@CFNotNull` in Java) or a malformed number in one (a malformed number in an
optional field reads as absent: 4.9.3 leaves the field null and goes on).  The headers themselves are in
:mod:`rocketstore.remoting.send_headers` and :mod:`rocketstore.remoting.headers`.

Pure: imports only errors and message.java_numbers (the int and long parsers), never another remoting
module, and nothing with sockets, clocks or threads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Self

from rocketstore.errors import ProtocolError
from rocketstore.message.java_numbers import parse_java_int, parse_java_long

__all__ = [
    "CommandHeader",
    "HeaderFieldError",
    "parse_java_boolean",
    "parse_java_int",
    "parse_java_long",
]


class HeaderFieldError(ProtocolError):
    """A custom header field that is missing or cannot be parsed; `field_name` is its wire name."""

    def __init__(self, field_name: str, reason: str, value: str | None = None) -> None:
        self.field_name = field_name
        self.reason = reason
        self.value = value
        shown = "" if value is None else f" (got {value[:64]!r})"
        super().__init__(f"header field {field_name!r} {reason}{shown}")


# --- Java value parsing --------------------------------------------------------------------------
# (ints and longs: message/java_numbers.py, shared with the store and the broker's property readers)


def parse_java_boolean(text: str) -> bool:
    """Boolean.parseBoolean: "true" in any case is True, anything else (even "1" or "yes") is False."""
    return len(text) == 4 and text.lower() == "true"


def _parse_marker(text: str) -> bool:
    return text == "true"


# --- the field table machinery ---------------------------------------------------------------------


class _Kind(Enum):
    STRING = "string"
    INT = "int"
    LONG = "long"
    BOOLEAN = "boolean"
    # Present-and-exactly-"true" marker, compared case-sensitively (how _UNIQUE_KEY_QUERY is read).
    MARKER = "marker"


_PARSERS: dict[_Kind, Callable[[str], object] | None] = {
    _Kind.STRING: None,
    _Kind.INT: parse_java_int,
    _Kind.LONG: parse_java_long,
    _Kind.BOOLEAN: parse_java_boolean,
    _Kind.MARKER: _parse_marker,
}


def _req(wire: str, kind: _Kind = _Kind.STRING) -> Any:
    return field(metadata={"wire": wire, "kind": kind, "required": True})


def _opt(wire: str, kind: _Kind = _Kind.STRING, default: object = None) -> Any:
    return field(default=default, metadata={"wire": wire, "kind": kind, "required": False})


@dataclass(frozen=True, slots=True)
class _Spec:
    attr: str
    wire: str
    kind: _Kind
    required: bool
    parse: Callable[[str], object] | None  # None: the string itself


_SPEC_CACHE: dict[tuple[type, bool], tuple[_Spec, ...]] = {}

# SendMessageRequestHeaderV2's one-letter names, keyed by the v1 wire name.
_SEND_V2_NAMES = {
    "producerGroup": "a",
    "topic": "b",
    "defaultTopic": "c",
    "defaultTopicQueueNums": "d",
    "queueId": "e",
    "sysFlag": "f",
    "bornTimestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsumeTimes": "j",
    "unitMode": "k",
    "maxReconsumeTimes": "l",
    "batch": "m",
}


def _specs(cls: type, v2: bool = False) -> tuple[_Spec, ...]:
    specs = _SPEC_CACHE.get((cls, v2))
    if specs is None:
        specs = tuple(
            _Spec(
                attr=f.name,
                wire=_SEND_V2_NAMES[f.metadata["wire"]] if v2 else f.metadata["wire"],
                kind=f.metadata["kind"],
                required=f.metadata["required"],
                parse=_PARSERS[f.metadata["kind"]],
            )
            for f in dataclasses.fields(cls)
        )
        _SPEC_CACHE[(cls, v2)] = specs
    return specs


def _decode(cls: type, specs: tuple[_Spec, ...], ext_fields: Mapping[str, str]) -> Any:
    values: dict[str, object] = {}
    for spec in specs:
        raw = ext_fields.get(spec.wire)
        if raw is None:
            if spec.required:
                raise HeaderFieldError(spec.wire, "is missing")
            continue
        if type(raw) is not str:
            raise HeaderFieldError(spec.wire, f"is a {type(raw).__name__}, not a string")
        parse = spec.parse
        if parse is None:
            values[spec.attr] = raw
            continue
        try:
            values[spec.attr] = parse(raw)
        except ValueError as exc:
            if not spec.required:
                # 4.9.3 logs the failed parse and leaves the field unset: an optional one reads as absent
                continue
            raise HeaderFieldError(spec.wire, f"is not a valid {spec.kind.value}", raw) from exc
    return cls(**values)


def _encode(header: object, specs: tuple[_Spec, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        value = getattr(header, spec.attr)
        if value is None:  # Java leaves null fields out of extFields
            continue
        kind = spec.kind
        if kind is _Kind.STRING:
            out[spec.wire] = value if type(value) is str else str(value)
        elif kind is _Kind.BOOLEAN:
            out[spec.wire] = "true" if value else "false"
        elif kind is _Kind.MARKER:
            if value:
                out[spec.wire] = "true"
        else:
            out[spec.wire] = str(int(value))
    return out


class CommandHeader:
    """Base of every header: `from_ext_fields` parses Java-style, `to_ext_fields` renders all-strings."""

    __slots__ = ()

    @classmethod
    def from_ext_fields(cls, ext_fields: Mapping[str, str]) -> Self:
        """Parse the header; unknown keys are ignored.  Raises HeaderFieldError."""
        header: Self = _decode(cls, _specs(cls), ext_fields)
        return header

    def to_ext_fields(self) -> dict[str, str]:
        """The header as extFields: every value a string, None fields left out."""
        return _encode(self, _specs(type(self)))


_STR, _INT, _LONG, _BOOL = _Kind.STRING, _Kind.INT, _Kind.LONG, _Kind.BOOLEAN
