"""JSON bodies as Java's fastjson writes and reads them.

fastjson writes maps with non-string keys without quotes: integer keys bare (``{0:"127.0.0.1:10911"}`` in
a route, ``{0:12,1:34}`` in consumerOffset.json) and object keys as objects (``{{"brokerName":"b",
"queueId":0,"topic":"t"}:{...}}`` in TopicStatsTable and ConsumeStats bodies).  Python's ``json`` rejects
both, so :func:`loads` is a small recursive-descent parser that accepts standard JSON plus those keys:
an integer key becomes an ``int``, an object key becomes a ``tuple`` of its sorted ``(name, value)`` pairs
(hashable, so it can stay a dict key).

:func:`dumps` writes compact JSON; dict keys that are ints are written quoted (valid JSON, which fastjson,
jsoncpp with ``allowNumericKeys`` and every RocketMQ client read back) and :func:`dumps_object_keyed`
writes fastjson's object-keyed maps for the two bodies that need them.  :func:`dumps_pretty` writes
fastjson's pretty form (the broker's config files).  All of them escape strings as fastjson does
(:func:`java_escapes`), and leave out a map's null values as fastjson does.

Pure: no I/O.  Raises :class:`JsonBodyError` (a ProtocolError) for anything it cannot parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rocketstore.errors import ProtocolError

__all__ = ["LOWER_HEX_ESCAPE", "RAW_NEEDS_JAVA_ESCAPE", "JsonBodyError", "dumps", "dumps_object_keyed", "dumps_pretty", "java_escapes",
           "loads"]

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


# In json's output (ensure_ascii=False) at one position: a control character's escape whose hex json writes
# with a lower-case letter, any other escape but a \\u one (kept whole, so the backslash of an escaped
# backslash starts no match; a \\u escape of digits only, such as the \\u0001 / \\u0002 separators of every
# properties string, needs no change and so costs no call), or a character that json writes raw and fastjson
# escapes (DEL, the C1 controls, U+2028, U+2029).
_JAVA_ESCAPE = re.compile("\\\\u00(?:0[bef]|1[a-f])|\\\\[^u]|[\x7f-\x9f\u2028\u2029]")


# json's escapes that fastjson writes with upper-case hex (``\\u000b`` for ``\\u000B``), the one thing an
# ASCII text with ``\\u`` in it may need changed: a message's properties carry ``\\u0001`` and ``\\u0002`` in
# every send, which need nothing.  (An escaped backslash followed by ``u000b`` matches too; java_escapes
# then changes nothing, as it should.)
LOWER_HEX_ESCAPE = re.compile("\\\\u00(?:0[bef]|1[a-f])")


#: a character of a string value that java_escapes changes in its JSON (json escapes it with a lower-case hex
#: letter, or writes it raw where fastjson escapes it): a value without one needs no java_escapes
RAW_NEEDS_JAVA_ESCAPE = re.compile("[\x0b\x0e\x0f\x1a-\x1f\x7f-\x9f\u2028\u2029]")


def _java_escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 1:
        return "\\u%04X" % ord(text)
    return "\\u" + text[2:].upper() if len(text) == 6 else text


def java_escapes(text: str) -> str:
    """*text*, a JSON document json wrote with ``ensure_ascii=False``, with its strings escaped as fastjson
    1.2.48 escapes them: control characters other than \\b \\t \\n \\f \\r as ``\\u`` with upper-case hex
    (``\\u001F``), and DEL, U+0080-U+009F, U+2028 and U+2029 as ``\\u`` escapes too (json writes those raw).
    An ASCII text without a DEL or a control character's escape with a hex letter, what nearly every header
    and body is, is returned as it is."""
    if text.isascii() and "\x7f" not in text and ("\\u" not in text or not LOWER_HEX_ESCAPE.search(text)):
        return text
    return _JAVA_ESCAPE.sub(_java_escape, text)


def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):  # (a null value is left out, as fastjson leaves out a map's null values)
        return {str(k) if not isinstance(k, str) else k: _plain(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v) for v in obj]
    return obj


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON; int keys are quoted.  A lone surrogate (a peer's ``"\\ud800"`` escape, which JSON
    allows and fastjson keeps in a Java String) becomes ``?`` as Java's String.getBytes(UTF_8) writes it:
    strict encoding raised, and one such value in a table broke every later answer and write of it."""
    text = json.dumps(_plain(obj), ensure_ascii=False, separators=(",", ":"))
    return java_escapes(text).encode("utf-8", "replace")


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
    return java_escapes("{" + ",".join(out) + "}").encode("utf-8", "replace")  # lone surrogates as in dumps


def dumps_pretty(obj: Any) -> str:
    """*obj* as fastjson's ``toJSONString(obj, true)`` writes it (4.9.3's config files: topics.json,
    consumerOffset.json, ...): a tab per level, no space after a colon, each string-keyed member and each
    array item on a line of its own, ``{}`` and ``[]`` when empty; a map's int keys bare and, as fastjson
    writes them, without the line breaks (``{0:12,1:34`` then the closing brace on its own line); a null map
    value left out.  A lone surrogate becomes ``?`` as in :func:`dumps` (Java's getBytes(UTF_8)), so that the
    text can be written as UTF-8."""
    out: list[str] = []
    _pretty(obj, 0, out)
    text = java_escapes("".join(out))
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


_quote = json.encoder.encode_basestring  # type: ignore[attr-defined]  # (json's own, C when built)


def _pretty(obj: Any, depth: int, out: list[str]) -> None:
    kind = type(obj)
    if kind is str:
        out.append(_quote(obj))
    elif kind is int:
        out.append(int.__repr__(obj))
    elif obj is True or obj is False:
        out.append("true" if obj else "false")
    elif isinstance(obj, Mapping):
        first = True
        inner = "\n" + "\t" * (depth + 1)
        for key, value in obj.items():
            if value is None:
                continue
            if first:
                out.append("{")
                first = False
            else:
                out.append(",")
            if isinstance(key, str):
                out.append(inner)
                out.append(_quote(key))
            elif isinstance(key, bool) or not isinstance(key, int):
                out.append(_quote(str(key)))
            else:
                out.append(int.__repr__(key))
            out.append(":")
            _pretty(value, depth + 1, out)
        out.append("{}" if first else "\n" + "\t" * depth + "}")
    elif isinstance(obj, (list, tuple, set, frozenset)):
        if not obj:
            out.append("[]")
            return
        out.append("[")
        inner = "\n" + "\t" * (depth + 1)
        for index, value in enumerate(obj):
            if index:
                out.append(",")
            out.append(inner)
            _pretty(value, depth + 1, out)
        out.append("\n" + "\t" * depth + "]")
    else:
        out.append(json.dumps(obj, ensure_ascii=False))
