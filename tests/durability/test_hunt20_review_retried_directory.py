"""A directory whose entry could not be synced into its parent is not left behind half-made: the writer that
heard of the failure and writes again later makes it (and syncs its parent) again, so what that later write
made durable outlasts a power loss.  The power loss is powerloss.py's SyncRecorder(entries_need_sync=True)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from rocketstore.files import write_text_atomically
from rocketstore.store.file_queue import FileQueue

from .powerloss import EveryUnsyncedPageLost, SyncRecorder


def _failing_once(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """The disk fails the next fsync of *directory* (EIO), then works again; every other fsync goes on to
    the one installed now (a SyncRecorder's, when it is active)."""
    recorded = os.fsync
    failures = [errno.EIO]
    target = os.path.realpath(directory)

    def fsync(fd: int) -> None:
        if failures and stat.S_ISDIR(os.fstat(fd).st_mode) and os.readlink(f"/proc/self/fd/{fd}") == target:
            raise OSError(failures.pop(), os.strerror(errno.EIO))
        recorded(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_config_write_retried_after_its_new_directory_failed_to_sync_survives_a_power_loss(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first write of consumerOffset.json makes ``config/``; the store root's fsync fails (EIO) and the
    writer hears of it; its next write works and returns, then the power goes out: the file is there (not
    lost with a ``config/`` whose entry the root was never synced with)."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    offsets = {"offsetTable": {"T@G": {"0": 42}}}
    path = str(live / "config" / "consumerOffset.json")
    with recorder.active():
        _failing_once(monkeypatch, live)
        with pytest.raises(OSError):
            write_text_atomically(path, json.dumps(offsets))
        write_text_atomically(path, json.dumps(offsets))
        recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        monkeypatch.undo()
    assert json.loads((crashed / "config" / "consumerOffset.json").read_text()) == offsets


def test_a_queue_segment_retried_after_its_new_directory_failed_to_sync_survives_a_power_loss(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new queue's first segment makes ``consumequeue/<topic>/<queueId>``; the topic directory's fsync
    fails (EIO) and the creation with it; the next try works, its entry is written and flushed (the
    checkpoint may then tell recovery not to rebuild it), and the power goes out: the segment is there."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    queue = FileQueue(str(live / "consumequeue" / "New" / "3"), 160, writable=True)
    with recorder.active():
        try:
            _failing_once(monkeypatch, live / "consumequeue" / "New")
            with pytest.raises(OSError):
                queue.create_next()
            queue.create_next().append(b"entry" * 4)
            assert queue.flush()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            monkeypatch.undo()
            queue.close()
    segment = crashed / "consumequeue" / "New" / "3" / "00000000000000000000"
    assert segment.exists()
    assert segment.read_bytes()[:20] == b"entry" * 4
