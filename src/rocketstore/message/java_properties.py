r"""Java ``.properties`` text: broker.conf and namesrv.conf files, and the bodies of GET/UPDATE_BROKER_CONFIG and
GET/UPDATE_NAMESRV_CONFIG, which RocketMQ writes with ``Properties`` / ``MixAll.properties2String``.

Read as ``Properties.load`` reads them: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!``
comment lines, blank lines; a key alone has the empty value; a line ending in an odd number of backslashes
goes on at the next line (its leading whitespace skipped); the escapes ``\t \n \r \f \uXXXX`` and
``\<any other character>`` (that character: ``\=``, ``\:``, ``\ `` and ``\\`` in keys and values); lines
end at ``\n``, ``\r`` or ``\r\n`` only.  Two differences, kept on purpose: a value's trailing whitespace
is dropped (Java keeps it, and 4.9.3's properties2Object then silently ignores ``listenPort=10912 ``), and
a malformed ``\uXXXX`` reads as ``u`` and what follows (Java's load throws).  A leading byte order mark
is skipped by :func:`read_properties_file`.  Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from rocketstore.errors import StoreConfigError

__all__ = ["escape_property", "format_properties", "parse_properties_text", "read_properties_file"]

_WHITESPACE = " \t\f"
_NATURAL_LINES = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")
#: a byte that was not UTF-8, as the surrogateescape error handler keeps it
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _logical_lines(text: str) -> Iterator[str]:
    """Properties.load's LineReader: comment and blank lines dropped, continued lines joined (the backslash
    and the line end removed, the next line's leading whitespace skipped)."""
    pending: str | None = None
    for natural in _NATURAL_LINES.split(text):
        line = natural.lstrip(_WHITESPACE)
        if pending is None:
            if not line or line[0] in "#!":
                continue
        else:
            line = pending + line
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = line[:-1]
            continue
        pending = None
        yield line
    if pending is not None:  # a continuation at the end of the text: Java takes what it has
        yield pending


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u" and i + 4 <= n and all(h in _HEX for h in text[i:i + 4]):
            out.append(chr(int(text[i:i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """(key, value) of one logical line, unescaped, as Properties.load splits it."""
    n = len(line)
    key_end = n
    value_start = n
    has_separator = False
    escaped = False
    for i, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        elif c in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
    while value_start < n:
        c = line[value_start]
        if c not in _WHITESPACE:
            if has_separator or c not in "=:":
                break
            has_separator = True
        value_start += 1
    return _unescape(line[:key_end]), _unescape(line[value_start:]).rstrip(_WHITESPACE)


def parse_properties_text(text: str) -> dict[str, str]:
    """*text* as a dict, later lines winning."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        props[key] = value
    return props


def read_properties_file(path: str) -> dict[str, str]:
    """The file at *path* as :func:`parse_properties_text` reads it, as UTF-8 text.  Bytes that are not UTF-8
    are taken in comments only (a GBK or Latin-1 editor's remarks, which 4.9.3, reading every byte as
    ISO-8859-1, passes over too); in a key or value (or a binary file) they are StoreConfigError, named with
    the first byte where the file stops being UTF-8."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        props = parse_properties_text(raw.decode("utf-8", "surrogateescape").removeprefix("\ufeff"))
        if any(_NOT_UTF8.search(k) or _NOT_UTF8.search(v) for k, v in props.items()):
            raise StoreConfigError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                                   ) from exc
        return props
    return parse_properties_text(text.removeprefix("\ufeff"))


def escape_property(text: str) -> str:
    """*text* as a properties line writes it so that :func:`parse_properties_text` (and Java's
    Properties.load) reads it back unchanged: backslashes doubled, line ends escaped."""
    if "\\" in text or "\n" in text or "\r" in text:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return text


def format_properties(pairs: Mapping[str, object] | Iterable[tuple[str, object]]) -> str:
    r"""``key=value`` lines (booleans as Java prints them), one a line with a final newline.  Unlike 4.9.3's
    properties2String, a backslash or line end in a value is escaped (:func:`escape_property`), so that the
    text reads back as it was written (4.9.3 wrote ``C:\\store`` back as ``C:\store``, read as
    ``C:store``)."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    lines = [f"{k}={escape_property(str(v).lower() if isinstance(v, bool) else str(v))}" for k, v in items]
    return "".join(line + "\n" for line in lines)
