"""Java's number parsing for text that RocketMQ reads with ``Integer.parseInt`` / ``Long.parseLong``: header
fields (remoting/header_fields.py) and properties such as DELAY, which the store, the broker's send, reply and
END_TRANSACTION paths all read the way 4.9.3's ``Message.getDelayTimeLevel`` does.

Python's ``int()`` takes more than Java does (surrounding blanks, underscores between digits), so every such
reading goes through these.  Pure: no imports but the standard library.
"""

from __future__ import annotations

__all__ = ["INT_MAX", "INT_MIN", "LONG_MAX", "LONG_MIN", "java_decimal_digits", "java_int_problem",
           "java_value", "number_format_remark", "parse_java_int", "parse_java_long"]

#: the ranges of Java's int and long
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_SIGNS = ("+", "-")


def java_decimal_digits(digits: str) -> bool:
    """Whether every character of *digits* (non-empty) is a decimal digit to Java's Character.digit, which
    takes any script's (str.isdecimal) but reads UTF-16 units: a digit beyond the BMP (U+1D7D9 ...) is two
    that are not digits."""
    return digits.isdecimal() and (digits.isascii() or max(digits) <= "\uffff")


def _parse_java_integer(text: str, low: int, high: int, kind: str) -> int:
    # int() alone would also take surrounding blanks and underscores, which Java rejects
    digits = text[1:] if text[:1] in _SIGNS else text
    if not java_decimal_digits(digits):
        raise ValueError(f"{text[:64]!r} is not a decimal {kind}")
    value = int(text)  # may itself raise ValueError past Python's 4300-digit limit
    if not low <= value <= high:
        raise ValueError(f"{text[:64]!r} is out of range for a {kind}")
    return value


def parse_java_int(text: str) -> int:
    """Integer.parseInt: optional sign, decimal digits, 32-bit range; ValueError otherwise."""
    return _parse_java_integer(text, INT_MIN, INT_MAX, "int")


def parse_java_long(text: str) -> int:
    """Long.parseLong: optional sign, decimal digits, 64-bit range; ValueError otherwise."""
    return _parse_java_integer(text, LONG_MIN, LONG_MAX, "long")


def number_format_remark(text: str) -> str:
    """What 4.9.3 answers (the exception's text) when parseInt / parseLong refuses *text*."""
    return f'java.lang.NumberFormatException: For input string: "{text[:64]}"'


def java_int_problem(text: str | None) -> str | None:
    """None when *text* is None or what Integer.parseInt reads; else :func:`number_format_remark` of it (a
    broker path that 4.9.3 lets throw answers SYSTEM_ERROR with it)."""
    if text is None:
        return None
    try:
        parse_java_int(text)
    except ValueError:
        return number_format_remark(text)
    return None


#: Integer.parseInt / Long.parseLong, which the configuration setters' conversions use
_JAVA_PARSERS = {"int": parse_java_int, "long": parse_java_long}


def java_value(kind: str, raw: str) -> str | None:
    """*raw* as a 4.9.3 configuration setter of *kind* ("int", "long", "bool"; else a string) takes it, as the
    text GET_BROKER_CONFIG / GET_NAMESRV_CONFIG then show; None when the setter would throw
    (Integer.parseInt / Long.parseLong of a value with spaces, a fraction, out of range).  A boolean is
    Boolean.parseBoolean: any text but ``true`` (in any case) is false.  The broker's kept properties
    (broker.config_keys) and the name server's Netty settings (namesrv.config) both convert with it."""
    if kind == "bool":
        return "true" if raw.lower() == "true" else "false"
    if kind in _JAVA_PARSERS:
        try:
            return str(_JAVA_PARSERS[kind](raw))
        except ValueError:
            return None
    return raw
