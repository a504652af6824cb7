"""Bytes decoded as UTF-8 the way Java's ``new String(bytes, UTF_8)`` decodes them.

4.9.3 reads a stored record's properties that way: malformed input never fails, each malformed sequence
becomes one U+FFFD.  Python's ``"replace"`` agrees except on an encoded surrogate (lead byte ED followed by
A0..BF): Java reads ED like any other three-byte lead, so ED plus up to two continuation bytes is one U+FFFD,
where Python gives one per byte.  The handler below widens exactly that case.
"""

from __future__ import annotations

import codecs

#: the codecs error handler of Java's replacement (``bytes.decode("utf-8", JAVA_REPLACE)``)
JAVA_REPLACE = _HANDLER = "rocketstore-java-utf8"


def _java_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    data = exc.object
    i = exc.start
    n = len(data)
    if data[i] == 0xED and i + 1 < n and 0x80 <= data[i + 1] <= 0xBF:
        end = i + 3 if i + 2 < n and 0x80 <= data[i + 2] <= 0xBF else i + 2
        return "\ufffd", end
    return "\ufffd", exc.end


codecs.register_error(_HANDLER, _java_replace)


def java_utf8(raw: bytes | bytearray | memoryview) -> str:
    """*raw* as Java's ``new String(raw, UTF_8)``: strict UTF-8 first (the usual case, no extra cost), then
    each malformed sequence replaced by one U+FFFD as Java counts them."""
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError:
        return str(raw, "utf-8", _HANDLER)
