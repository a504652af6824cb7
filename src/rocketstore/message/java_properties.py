"""Java ``.properties`` text: broker.conf and namesrv.conf files, and the bodies of GET/UPDATE_BROKER_CONFIG and
GET/UPDATE_NAMESRV_CONFIG, which RocketMQ writes with ``Properties`` / ``MixAll.properties2String``.

The subset RocketMQ's files use: one ``key=value`` (or ``key: value``, ``key value``) a line, ``#`` and ``!``
comment lines, blank lines; a key alone has the empty value, as ``Properties.load`` reads it.  Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rocketstore.errors import StoreConfigError

__all__ = ["format_properties", "parse_properties_text", "read_properties_file"]

_LINE = re.compile(r"([^=:\s]+)\s*[=:\s]\s*(.*)$")


def parse_properties_text(text: str) -> dict[str, str]:
    """*text* as a dict, later lines winning."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        m = _LINE.match(stripped)
        if m is None:
            props[stripped] = ""
        else:
            props[m.group(1)] = m.group(2).strip()
    return props


def read_properties_file(path: str) -> dict[str, str]:
    """The file at *path* as :func:`parse_properties_text` reads it, as UTF-8 text (StoreConfigError when it
    is not: a binary file or another encoding, named with the byte where it stops being UTF-8)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreConfigError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return parse_properties_text(text)


def format_properties(pairs: Mapping[str, object] | Iterable[tuple[str, object]]) -> str:
    """``key=value`` lines (booleans as Java prints them), one a line with a final newline."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    lines = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in items]
    return "".join(line + "\n" for line in lines)
