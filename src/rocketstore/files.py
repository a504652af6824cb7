"""Files every layer writes the same way: whole or not at all."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["make_directories", "path_lock", "sync_directory", "write_text_atomically"]

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


def sync_directory(path: str) -> None:
    """fsync a directory, so the names created in it (or removed) outlast a power loss.  EINVAL is a file
    system that cannot sync a directory (nothing more to do there); any other error (EIO, ENOSPC) means the
    change may not be durable, and is raised: a caller told a write succeeded would not write it again.
    (The one definition: the store's segments and queues and every layer's config files use it.)"""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


def make_directories(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)`` whose new directories outlast a power loss: the parent of each
    one made is synced (a file synced into a directory whose own entry was lost is lost with it: ``config/``
    in a store root, a queue's first segment).  Only an isdir when *path* exists (every segment creation and
    config rewrite calls it)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    make_directories(parent)
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return  # made meanwhile (by another writer, another queue's first segment), which syncs the parent
    try:
        sync_directory(parent)
    except BaseException:
        # left there, the next call would find it and sync nothing: what a later write made durable in it
        # would go with its entry at a power loss (the caller heard of this failure and will try again)
        try:
            os.rmdir(path)
        except OSError:
            pass  # something went in meanwhile (another writer's file): the directory stays
        raise


def _write_text_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    make_directories(directory)
    data = text.encode("utf-8")
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _keep_previous(path)
        os.replace(tmp, path)
    except BaseException:
        # a full disk (ENOSPC) fails the write part way: the partial file would hold space the store needs
        _unlink_quietly(tmp)
        raise
    sync_directory(directory)  # the rename (and the .bak's) is durable only now


def _keep_previous(path: str) -> None:
    """Make ``<path>.bak`` the current *path* (when it has content), whole or not at all: the file itself is
    linked under a staging name and renamed over the old ``.bak``, which takes no space, so a full disk or a
    crash never leaves a truncated ``.bak`` (RocketMQ's string2File rewrites the .bak in place, which can).
    Where hard links are refused (or *path* is a symbolic link), the content is copied to the staging name."""
    try:
        if os.path.getsize(path) == 0:
            return
    except FileNotFoundError:
        return
    staged = path + ".bak.tmp"
    _unlink_quietly(staged)
    try:
        if os.path.islink(path) or not _hard_link(path, staged):
            with open(path, "rb") as fh:
                previous = fh.read()
            with open(staged, "wb") as fh:
                fh.write(previous)
        os.replace(staged, path + ".bak")
    except BaseException:
        _unlink_quietly(staged)
        raise


def _hard_link(path: str, link: str) -> bool:
    try:
        os.link(path, link)
    except OSError:  # no hard links on this file system (or across devices)
        return False
    return True


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
