"""A new consume queue's directories are synced by the next flush, not by the dispatcher as it makes them.

Each new queue made three directory syncs on the dispatch thread (its topic's entry in consumequeue/, its
queue directory's in the topic's, its first segment's), ~4 ms each on a virtual disk: most of what
auto-creating a topic cost.  4.9.3 makes a queue file with mkdirs and a mapping and syncs no directory
(MappedFile.init); its recovery rebuilds from the commitlog what the checkpoint does not name.  The syncs now
wait for the next flush, which makes each directory durable once for all its new entries, before the
checkpoint names the entries: a power loss after that still finds every segment the checkpoint vouches for.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.file_queue import DirSyncs
from rocketstore.store.message_store import MessageStore

from .powerloss import EveryUnsyncedPageLost, SyncRecorder

CONFIG = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8,
                     max_hash_slot_num=4, max_index_num=8, preallocate_commit_log=False)


@contextmanager
def _syncs() -> Iterator[list[str]]:
    """The paths fsync'd or fdatasync'd meanwhile, in order (a directory's end in '/')."""
    seen: list[str] = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def note(fd: int) -> None:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        seen.append(path + "/" if os.path.isdir(path) else path)

    def fsync(fd: int) -> None:
        real_fsync(fd)
        note(fd)

    def fdatasync(fd: int) -> None:
        real_fdatasync(fd)
        note(fd)

    os.fsync, os.fdatasync = fsync, fdatasync  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.fsync, os.fdatasync = real_fsync, real_fdatasync  # type: ignore[assignment]


def test_dispatch_syncs_no_directory_and_the_flush_syncs_each_once_before_the_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "store"
    cq = os.path.realpath(root / "consumequeue")
    with MessageStore.open(root, CONFIG, background=False) as store:
        assert store.put(Message("Old", b"x")).ok
        store.flush()
        with _syncs() as seen:
            for i in range(4):  # four new topics, four new queues of one more
                assert store.put(Message(f"New{i}", b"x")).ok
                assert store.put(Message("Wide", b"x", queue_id=i)).ok
            assert store.wait_dispatched()
            dispatched = list(seen)
            store.flush()
        # the dispatcher made 8 queues and synced none of their directories (it synced 20: 3 a new topic's
        # queue, 2 a new queue of a known topic)
        assert [p for p in dispatched if p.startswith(cq)] == []
        assert all((root / "consumequeue" / f"New{i}" / "0").is_dir() for i in range(4))
        flushed = seen[len(dispatched):]
        dirs = collections.Counter(p for p in flushed if p.endswith("/") and p.startswith(cq))
        expected = {cq + "/", cq + "/Wide/", *(f"{cq}/Wide/{i}/" for i in range(4)),
                    *(f"{cq}/New{i}/" for i in range(4)), *(f"{cq}/New{i}/0/" for i in range(4))}
        assert set(dirs) == expected
        assert max(dirs.values()) == 1  # each once, however many new entries it got
        checkpoint = flushed.index(os.path.realpath(root / "checkpoint"))
        assert all(flushed.index(d) < checkpoint for d in expected)
        # synced: the next flush has none left to sync
        with _syncs() as again:
            store.flush()
        assert [p for p in again if p.endswith("/") and p.startswith(cq)] == []


def test_a_directory_sync_that_fails_is_tried_again_by_the_next_flush(tmp_path: Path) -> None:
    syncs = DirSyncs()
    target = tmp_path / "q" / "0"
    syncs.make_directories(str(target))
    with syncs.changing(str(target)):
        (target / "segment").write_bytes(b"")
    real_fsync = os.fsync
    failed: list[int] = []

    def failing(fd: int) -> None:
        if not failed:
            failed.append(fd)
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    os.fsync = failing  # type: ignore[assignment]
    try:
        try:
            syncs.sync()
            raise AssertionError("the failed sync was not raised")
        except OSError as exc:
            assert exc.errno == 5
    finally:
        os.fsync = real_fsync  # type: ignore[assignment]
    with _syncs() as seen:
        syncs.sync()
    # every directory that had a change is synced by the second try (the failed one and those after it)
    assert set(seen) >= {str(target) + "/"}
    assert set(seen) <= {str(tmp_path) + "/", str(tmp_path / "q") + "/", str(target) + "/"}
    with _syncs() as seen:
        syncs.sync()
    assert seen == []


def test_a_dropped_queue_waiting_for_its_directory_sync_does_not_fail_the_flush(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", CONFIG, background=False) as store:
        assert store.put(Message("Keep", b"x")).ok
        assert store.put(Message("Gone", b"x")).ok
        assert store.wait_dispatched()
        assert ("Gone", 0) in store.clean_unused_topics({"Keep"})
        store.flush()  # (the directories of Gone/0 are gone: nothing to sync there)
        assert not (tmp_path / "store" / "consumequeue" / "Gone").exists()


def test_a_new_queue_the_checkpoint_names_survives_a_power_loss(tmp_path: Path) -> None:
    """A new topic's record in the first commitlog segment, then enough others that recovery starts past it;
    a flush writes the checkpoint; the power goes out: the queue's segment and directories are on the disk,
    and its message is served (recovery does not rebuild it: its record lies before where recovery starts)."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    now = int(time.time() * 1000)
    recorder = SyncRecorder(entries_need_sync=True)
    recorder.seed(live)
    with recorder.active():
        store = MessageStore.open(live, CONFIG, background=False)
        try:
            assert store.put(Message("Fresh", b"fresh", store_timestamp=now - 3_600_000)).ok
            for i in range(40):  # ~4 commitlog segments, stored 10 s ago but the last (now)
                stamp = now if i == 39 else now - 10_000
                assert store.put(Message("Fill", b"x" * 300, store_timestamp=stamp)).ok
            assert len(list((live / "commitlog").iterdir())) >= 3
            store.flush()
            recorder.crash_image(live, crashed, EveryUnsyncedPageLost())  # the power goes out here
        finally:
            store.close()
    assert (crashed / "consumequeue" / "Fresh" / "0" / "00000000000000000000").exists()
    with MessageStore.open(crashed, CONFIG, background=False) as store:
        assert store.recovery.abnormal
        got = store.get("Fresh", 0, 0, 8)
        assert [m.body for m in got.messages] == [b"fresh"]
