"""Java's tests of blank text, for the places where 4.9.3 reads text with ``String.trim`` or
``StringUtils.isBlank`` / ``UtilAll.isBlank``: Python's ``str.strip`` and ``str.isspace`` take more characters
(U+00A0 and the other no-break spaces) and ``strip`` fewer (the control characters below U+0020 that are not
whitespace).  Pure: no imports.
"""

from __future__ import annotations

__all__ = ["java_is_blank", "java_trim"]

_JAVA_BLANKS = "".join(chr(c) for c in range(33))  # what Java's String.trim takes off
#: what str.isspace() holds blank and Java's Character.isWhitespace (isBlank's test) does not
_NOT_JAVA_WHITESPACE = "\x85\xa0\u2007\u202f"


def java_trim(text: str) -> str:
    """Java's String.trim: only the characters up to U+0020 come off both ends (not U+00A0 and the other
    blanks Python's str.strip() takes)."""
    return text.strip(_JAVA_BLANKS)


def java_is_blank(text: str | None) -> bool:
    """StringUtils.isBlank / UtilAll.isBlank: None, empty, or only Character.isWhitespace characters."""
    return not text or all(c.isspace() and c not in _NOT_JAVA_WHITESPACE for c in text)
