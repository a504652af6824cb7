"""The broker's JSON config files under ``<storePathRootDir>/config``: atomic writes, tolerant reads.

RocketMQ's ConfigManager writes ``<file>.tmp``, keeps the previous file as ``<file>.bak`` and renames; it
reads the ``.bak`` when the main file is missing or unreadable.  We write ``.tmp`` + fsync + rename (+ a
directory fsync) so the file is always whole, copy the previous content to ``.bak``, and read with :func:`rocketstore.remoting.fastjson.loads`
so files a Java broker wrote (bare integer keys, pretty printed) load too.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from rocketstore.errors import CorruptFileError, ProtocolError
from rocketstore.files import write_text_atomically
from rocketstore.remoting import fastjson

__all__ = ["read_json_file", "write_json_atomically", "write_text_atomically"]

log = logging.getLogger(__name__)


def write_json_atomically(path: str, obj: Any) -> None:
    """Replace *path* with *obj* as JSON; a crash leaves either the old or the new file, never half of one."""
    write_text_atomically(path, json.dumps(fastjson_plain(obj), ensure_ascii=False, indent=1, sort_keys=False))




def fastjson_plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): fastjson_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [fastjson_plain(v) for v in obj]
    return obj


def read_json_file(path: str) -> Any | None:
    """The parsed content of *path* (or of ``path.bak`` when *path* is missing or unreadable); None if
    neither exists.  Empty files count as missing.

    Raises CorruptFileError when the ``.bak`` is needed and is there but unreadable too: 4.9.3's
    ConfigManager.load then fails and the broker does not start, rather than start with an empty table and
    overwrite both files (lost topics, groups and consumer offsets)."""
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            obj = fastjson.loads(data)
            if obj is not None and not isinstance(obj, dict):
                # fastjson cannot read an array or a scalar into the manager's object: unreadable too
                raise ProtocolError(f"a JSON {type(obj).__name__}, not an object")
            return obj
        except ProtocolError as exc:
            log.error("cannot parse %s: %s", candidate, exc)
            if candidate != path:
                raise CorruptFileError(candidate, 0, f"cannot parse it ({exc}) and {os.path.basename(path)} is "
                                       "missing or unreadable too; repair or remove the files") from exc
            continue
    return None
