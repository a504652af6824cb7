"""Files every layer writes the same way: whole or not at all."""

from __future__ import annotations

import os
import threading

__all__ = ["write_text_atomically"]

#: one write at a time (4.9.3's MixAll.string2File is static synchronized): two threads writing the same file
#: share ``<path>.tmp``, and one's rename would take the other's half-written file
_write_lock = threading.Lock()


def write_text_atomically(path: str, text: str) -> None:
    """Replace *path* with *text* (UTF-8): written to ``<path>.tmp``, synced, renamed over *path* and the
    directory synced, so a crash leaves the old file or the new one, never half of one; the previous content
    is kept as ``<path>.bak`` (RocketMQ's ConfigManager keeps one too and reads it when the file is bad).
    Thread-safe."""
    with _write_lock:
        _write_text_atomically(path, text)


def _write_text_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    data = text.encode("utf-8")
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        with open(path, "rb") as fh:
            previous = fh.read()
    except FileNotFoundError:
        previous = None
    if previous:
        # the fallback copy only; *path* itself is replaced atomically below and never goes missing
        with open(path + ".bak", "wb") as fh:
            fh.write(previous)
    os.replace(tmp, path)
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
