"""More directory entries that must survive a power loss as the writer left them: a config file written into
a new ``config/``, the files recovery deletes (index files past a cut commitlog, the queues of an empty
commitlog), a rebuild's old copies; and a directory sync that fails is no silent success.

The power loss is powerloss.py's SyncRecorder (see test_hunt20_dirsync_entries.py): a name lasts only once
its directory was synced with it; a deleted file comes back until its directory is synced without it."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore
from rocketstore.files import write_text_atomically
from rocketstore.store.rebuild import plan_rebuild, rebuild_store, scan_serial

from .powerloss import EveryUnsyncedPageLost, SyncRecorder
from .test_hunt20_dirsync_entries import _config, _filled, _keys, _seeded


def test_a_config_file_written_into_a_new_config_directory_survives_a_power_loss(tmp_path: Path) -> None:
    """The first write of a broker's consumerOffset.json makes ``config/`` in the store root; the write
    returns (the offsets are durable, the broker believes), then the power goes out: the file is there."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    offsets = {"offsetTable": {"T@G": {"0": 42}}}
    with recorder.active():
        write_text_atomically(str(live / "config" / "consumerOffset.json"), json.dumps(offsets))
        recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
    assert json.loads((crashed / "config" / "consumerOffset.json").read_text()) == offsets


def _failing_directory_fsync(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The disk fails a directory's fsync with *code* (file fsyncs work)."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC])
def test_a_config_write_whose_directory_sync_fails_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         code: int) -> None:
    """The rename is not durable when the directory's fsync fails: the writer hears of it (and, like every
    config writer on a full disk, writes the file again later) instead of taking the write as done."""
    (tmp_path / "config").mkdir()
    _failing_directory_fsync(monkeypatch, code)
    with pytest.raises(OSError) as raised:
        write_text_atomically(str(tmp_path / "config" / "topics.json"), "{}")
    assert raised.value.errno == code


def test_a_file_system_that_cannot_sync_a_directory_still_takes_config_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EINVAL: the file system has no directory sync at all; nothing more can be done, the write stands."""
    _failing_directory_fsync(monkeypatch, errno.EINVAL)
    write_text_atomically(str(tmp_path / "config" / "topics.json"), "{}")
    assert (tmp_path / "config" / "topics.json").read_text() == "{}"


def test_index_files_recovery_drops_past_a_cut_commitlog_stay_dropped_after_a_power_loss(
        tmp_path: Path) -> None:
    """The commitlog's last segments lost their records (zeroed); the open cuts the commitlog there and
    deletes the index files that begin past the cut; the power goes out: they are not back (their keys would
    name offsets the next records take)."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    config = _config()
    _filled(live, config, "Idx", 40)
    segments = sorted((live / "commitlog").iterdir())
    assert len(segments) >= 4
    for segment in segments[-2:]:
        segment.write_bytes(bytes(segment.stat().st_size))
    index_before = sorted(p.name for p in (live / "index").iterdir())
    recorder = SyncRecorder()
    _seeded(live, recorder)
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            left = sorted(p.name for p in (live / "index").iterdir())
            assert len(left) < len(index_before)  # the open dropped some
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    assert sorted(p.name for p in (crashed / "index").iterdir()) == left


def test_queues_an_empty_commitlog_drops_stay_dropped_after_a_power_loss(tmp_path: Path) -> None:
    """Every commitlog segment is gone (removed by hand); the open drops every consume queue, and new puts
    start the commitlog again at offset 0; the power goes out: the old queues are not back to point at the
    new records as if they were the old ones."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    config = _config()
    _filled(live, config, "Old", 10)
    shutil.rmtree(live / "commitlog")
    recorder = SyncRecorder()
    _seeded(live, recorder)
    with recorder.active():
        store = MessageStore.open(live, config, background=False)
        try:
            assert not (live / "consumequeue" / "Old").exists()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    assert not (crashed / "consumequeue" / "Old").exists()


def test_the_old_copies_an_in_place_rebuild_removes_stay_removed_after_a_power_loss(tmp_path: Path) -> None:
    """An in-place rebuild swaps its consumequeue/ and index/ in and removes the old ones (and its staging
    directory): the store root's synced entries name none of them, so a power loss cannot bring back
    copies no open reads and nothing removes."""
    live = tmp_path / "live"
    config = _config()
    _filled(live, config, "Re", 20)
    recorder = SyncRecorder(entries_need_sync=True)
    _seeded(live, recorder)
    plan = plan_rebuild(str(live), config.replace(store_path_root_dir=str(live)))
    with recorder.active():
        rebuild_store(plan, scan_serial(plan), in_place=True)
    durable = recorder.entries[os.path.realpath(live)]
    assert not {name for name in durable if name.startswith(".rebuild")}
    assert {"consumequeue", "index", "checkpoint", "commitlog"} <= durable
    with MessageStore.open(live, config, background=False) as store:
        assert len(_keys(store, "Re", 0)) > 0


def test_a_new_stores_checkpoint_survives_a_power_loss(tmp_path: Path) -> None:
    """A new store's first checkpoint is created in the store root; the power goes out: it is there, and the
    open after the crash keeps the index files it says are whole (lost, the open would drop every index
    file and re-index the whole commitlog)."""
    config = _config(flush_disk_type="SYNC_FLUSH")
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    with recorder.active():
        store = MessageStore.open(live, config)
        try:
            for i in range(40):  # 16 index entries a file, two a message (key and unique key): five files
                assert store.put(Message.create("Fresh", b"x" * 300, keys=f"k{i}")).ok
            assert store.wait_dispatched()
            store.flush()
            first_index = min(p.name for p in (live / "index").iterdir())
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())
        finally:
            store.close()
    assert (crashed / "checkpoint").exists()
    with MessageStore.open(crashed, config, background=False) as store:
        assert store.recovery.abnormal
        assert first_index in {p.name for p in (crashed / "index").iterdir()}
        assert store.query("Fresh", "k0").messages


def test_a_new_store_root_and_its_sync_flushed_records_survive_a_power_loss(tmp_path: Path) -> None:
    """The first open makes the store root (and the directories above it); puts acknowledged under
    SYNC_FLUSH; the power goes out: the root, and every acknowledged message, is there."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    config = _config(flush_disk_type="SYNC_FLUSH")
    with recorder.active():
        store = MessageStore.open(live / "brokers" / "a", config)
        try:
            for i in range(3):
                assert store.put(Message.create("Root", b"x" * 100, keys=f"k{i}")).ok
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())  # the power goes out here
        finally:
            store.close()
    with MessageStore.open(crashed / "brokers" / "a", config, background=False) as store:
        assert _keys(store, "Root", 0) == ["k0", "k1", "k2"]
