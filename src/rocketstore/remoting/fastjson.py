"""JSON bodies as Java's fastjson writes and reads them.

fastjson writes maps with non-string keys without quotes: integer keys bare (``{0:"127.0.0.1:10911"}`` in
a route, ``{0:12,1:34}`` in consumerOffset.json) and object keys as objects (``{{"brokerName":"b",
"queueId":0,"topic":"t"}:{...}}`` in TopicStatsTable and ConsumeStats bodies).  Python's ``json`` rejects
both, so :func:`loads` is a small recursive-descent parser that accepts standard JSON plus those keys:
an integer key becomes an ``int``, an object key becomes a ``tuple`` of its sorted ``(name, value)`` pairs
(hashable, so it can stay a dict key).

:func:`dumps` writes compact JSON; dict keys that are ints are written quoted (valid JSON, which fastjson,
jsoncpp with ``allowNumericKeys`` and every RocketMQ client read back) and :func:`dumps_object_keyed`
writes fastjson's object-keyed maps for the two bodies that need them.

Pure: no I/O.  Raises :class:`JsonBodyError` (a ProtocolError) for anything it cannot parse.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rocketstore.errors import ProtocolError

__all__ = ["JsonBodyError", "dumps", "dumps_object_keyed", "loads"]

_WS = " \t\r\n"
_MAX_DEPTH = 200


class JsonBodyError(ProtocolError):
    pass


_decoder = json.JSONDecoder(strict=False)


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """Parse JSON that may contain fastjson's bare integer keys and object keys."""
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonBodyError(f"JSON body is not UTF-8: {exc}") from exc
    try:
        return json.loads(data, strict=False)
    except (ValueError, RecursionError):
        pass  # not plain JSON: try the lenient parser
    if data.startswith("\ufeff"):  # a byte order mark (a file an editor saved): fastjson skips it
        return loads(data[1:])
    parser = _Parser(data)
    value = parser.value(0)
    parser.skip_ws()
    if parser.pos != len(data):
        raise JsonBodyError(f"trailing data at {parser.pos}")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise JsonBodyError("JSON nested too deeply")
        self.skip_ws()
        if self.pos >= len(self.text):
            raise JsonBodyError("unexpected end of JSON")
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj(depth)
        if ch == "[":
            return self.array(depth)
        try:
            value, end = _decoder.raw_decode(self.text, self.pos)
        except ValueError as exc:
            raise JsonBodyError(f"bad JSON value at {self.pos}: {exc}") from exc
        self.pos = end
        return value

    def key(self, depth: int) -> Any:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise JsonBodyError("unexpected end of JSON in a key")
        ch = self.text[self.pos]
        if ch == '"':
            return self.value(depth)
        if ch == "{":
            inner = self.obj(depth)
            return tuple(sorted(inner.items(), key=lambda kv: str(kv[0])))
        start = self.pos
        text = self.text
        pos = start
        if pos < len(text) and text[pos] == "-":
            pos += 1
        while pos < len(text) and text[pos].isdigit():
            pos += 1
        if pos == start or text[start:pos] == "-":
            raise JsonBodyError(f"bad object key at {start}")
        self.pos = pos
        return int(text[start:pos])

    def expect(self, ch: str) -> None:
        self.skip_ws()
        if self.pos >= len(self.text) or self.text[self.pos] != ch:
            raise JsonBodyError(f"expected {ch!r} at {self.pos}")
        self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def obj(self, depth: int) -> dict[Any, Any]:
        self.expect("{")
        result: dict[Any, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return result
        while True:
            key = self.key(depth + 1)
            try:
                hash(key)
            except TypeError as exc:
                raise JsonBodyError(f"unhashable object key before {self.pos}") from exc
            self.expect(":")
            result[key] = self.value(depth + 1)
            ch = self.peek()
            self.pos += 1
            if ch == "}":
                return result
            if ch != ",":
                raise JsonBodyError(f"expected ',' or '}}' at {self.pos - 1}")

    def array(self, depth: int) -> list[Any]:
        self.expect("[")
        result: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value(depth + 1))
            ch = self.peek()
            self.pos += 1
            if ch == "]":
                return result
            if ch != ",":
                raise JsonBodyError(f"expected ',' or ']' at {self.pos - 1}")


def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k) if not isinstance(k, str) else k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v) for v in obj]
    return obj


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON; int keys are quoted.  A lone surrogate (a peer's ``"\\ud800"`` escape, which JSON
    allows and fastjson keeps in a Java String) becomes ``?`` as Java's String.getBytes(UTF_8) writes it:
    strict encoding raised, and one such value in a table broke every later answer and write of it."""
    return json.dumps(_plain(obj), ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")


def dumps_object_keyed(fields: Mapping[str, Any], keyed_name: str,
                       pairs: Iterable[tuple[Mapping[str, Any], Any]]) -> bytes:
    """``{..fields.., "<keyed_name>": {{key object}: {value object}, ...}}`` the way fastjson writes a
    ``Map<MessageQueue, X>``: keys are JSON objects (not valid JSON; RocketMQ clients expect it); a value
    is an object or a number."""
    out: list[str] = []
    for name, value in fields.items():
        out.append(json.dumps(name) + ":" + json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":")))
    entries = [
        json.dumps(_plain(k), ensure_ascii=False, separators=(",", ":"), sort_keys=True) + ":"
        + json.dumps(_plain(v), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        for k, v in pairs
    ]
    out.append(json.dumps(keyed_name) + ":{" + ",".join(entries) + "}")
    return ("{" + ",".join(out) + "}").encode("utf-8", "replace")  # lone surrogates as in dumps
