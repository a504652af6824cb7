"""Files every layer writes the same way: whole or not at all."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["path_lock", "write_text_atomically"]

#: one write of a file at a time: two threads writing the same file share ``<path>.tmp``, and one's rename
#: would take the other's half-written file.  Per file, not one lock for all (4.9.3's MixAll.string2File is
#: static synchronized, but its writers are threads of their own): the broker writes topics.json (2 MB for
#: 10,000 topics) and consumerOffset.json off its event loop, and the small delayOffset.json on it, which
#: must not wait for a big file's fsyncs.  An entry lives while some thread holds or waits for it, so a
#: process that writes many different files (a consumer per temporary directory) does not keep a lock each.
_locks_guard = threading.Lock()
_write_locks: dict[str, list] = {}  # absolute path -> [RLock, threads holding or waiting]


@contextmanager
def path_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold the process-wide lock of the file *path* (re-entrant: a holder may call
    :func:`write_text_atomically` on the same path)."""
    key = os.path.abspath(path)
    with _locks_guard:
        entry = _write_locks.get(key)
        if entry is None:
            entry = _write_locks[key] = [threading.RLock(), 0]
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _locks_guard:
            entry[1] -= 1
            if entry[1] == 0:
                del _write_locks[key]


def write_text_atomically(path: str, text: str) -> None:
    """Replace *path* with *text* (UTF-8): written to ``<path>.tmp``, synced, renamed over *path* and the
    directory synced, so a crash leaves the old file or the new one, never half of one; the previous content
    is kept as ``<path>.bak`` (RocketMQ's ConfigManager keeps one too and reads it when the file is bad).
    Thread-safe."""
    with path_lock(path):
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
