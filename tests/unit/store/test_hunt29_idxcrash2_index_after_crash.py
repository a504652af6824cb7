"""Index after a crash (session 28's idxcrash, reverted, and session 29's idxcrash2).

* A crash that takes records the index already holds leaves the index's end offset (the newest file's
  endPhyOffset, below which building skips records as already indexed) past the recovered commitlog end:
  the records written next, where the lost ones were, got no index entries (a key query missed them,
  ``verify_store`` reported INDEX_KEY_NOT_FOUND; found by
  tests/property/test_hunt22_storemodel2_retention_model.py).
  Recovery now undoes the kept files' entries past the cut and pulls their end back to it, synced without
  counting the file flushed.  4.9.3 never does (IndexService has no truncation).
* Not changed: a crash that loses nothing (kill -9) with the newest index file newer than the checkpoint's
  index time: the load deletes that file and building indexes the record at the kept file's endPhyOffset
  again (4.9.3's ``< endPhyOffset`` rule; the golden ``killed`` store's dump lists TopicA/key-243 twice), so a
  key query may answer that one record twice, as 4.9.3's does.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.index_file import INDEX_HEADER
from rocketstore.store.mapped_file import MappedFile
from rocketstore.store.message_store import MessageStore
from rocketstore.store.verify import verify_store

SEGMENT = 4096
#: the property test's geometry: an index file holds 7 keys, so the fourth two-key record rolls the first
CONFIG = StoreConfig(mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=20 * 8,
                     max_hash_slot_num=4, max_index_num=8, preallocate_commit_log=False,
                     message_index_safe=True, file_reserved_time_h=72, delete_when="99")


def _delayed(n: int) -> Message:
    return Message.create("TopicA", b"", keys="kd", uniq_key=f"D{n:06d}", queue_id=1,
                          properties={PropertyName.DELAY: "1"})


def _plain(n: int) -> Message:
    return Message.create("TopicA", b"", keys="k1", uniq_key=f"U{n:06d}", queue_id=0)


def _put(store: MessageStore, message: Message) -> int:
    result = store.put(message)
    assert result.ok, result
    return result.commit_log_offset


def _crash(store: MessageStore, live: Path, crashed: Path, zero_from: int | None) -> MessageStore:
    """Copy the open store as a crash leaves it, with the commitlog zeroed from *zero_from* (a record torn
    at its first byte; None: as kill -9 leaves it, nothing lost), and open the copy (abnormal recovery)."""
    assert store.wait_dispatched()
    store.flush()
    shutil.copytree(live, crashed)
    store.close()
    if zero_from is not None:
        _zero(crashed, zero_from)
    reopened = MessageStore.open(crashed, CONFIG)
    assert reopened.recovery.abnormal
    assert reopened.wait_dispatched()
    return reopened


def _zero(root: Path, zero_from: int) -> None:
    segment = root / "commitlog" / f"{zero_from - zero_from % SEGMENT:020d}"
    with open(segment, "r+b") as f:
        f.seek(zero_from % SEGMENT)
        f.write(bytes(SEGMENT - zero_from % SEGMENT))


def _end_offsets_on_disk(root: Path) -> list[int]:
    files = sorted((root / "index").iterdir())
    return [INDEX_HEADER.unpack(p.read_bytes()[:INDEX_HEADER.size])[3] for p in files]  # endPhyOffset


def test_records_written_where_two_crashes_cut_are_indexed(tmp_path: Path) -> None:
    # the property test's failing example, step by step
    store = MessageStore.open(tmp_path / "gen0", CONFIG)
    try:
        assert _put(store, _delayed(0)) == 0
        plain = [_put(store, _plain(n)) for n in (1, 2, 3)]
        store = _crash(store, tmp_path / "gen0", tmp_path / "gen1", plain[2])  # the last record lost
        assert store.max_commit_log_offset == plain[2]
        store = _crash(store, tmp_path / "gen1", tmp_path / "gen2", plain[1])  # and the one before it
        assert store.max_commit_log_offset == plain[1]
        # the index files' ends are pulled back to the cut, on disk too (a later recovery reads them)
        assert max(_end_offsets_on_disk(tmp_path / "gen2")) == plain[1]
        again = _put(store, _delayed(4))
        assert again == plain[1]  # where the lost record was
        assert store.wait_dispatched()
        hits = {m.commit_log_offset for m in store.query(SCHEDULE_TOPIC, "kd", 64).messages if m.keys == "kd"}
        assert hits == {0, again}
        assert [m.commit_log_offset for m in store.query(SCHEDULE_TOPIC, "D000004", 64).messages] == [again]
        report = verify_store(store)
        assert report.ok, [str(p) for p in report.problems]
    finally:
        store.close()


def test_one_crash_that_takes_records_below_the_full_index_files_end(tmp_path: Path) -> None:
    # four records fill the first file (its end time goes to the checkpoint, so the crash keeps it) and open a
    # second; the crash takes the last two: the second file goes, the first's end lies past the cut
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]
        store = _crash(store, tmp_path / "live", tmp_path / "crashed", offsets[2])
        assert store.max_commit_log_offset == offsets[2]
        assert set(_end_offsets_on_disk(tmp_path / "crashed")) == {offsets[2]}
        new = [_put(store, _plain(n)) for n in (10, 11)]
        assert new[0] == offsets[2]
        assert store.wait_dispatched()
        for n, offset in zip((10, 11), new):
            assert [m.commit_log_offset for m in store.query("TopicA", f"U{n:06d}", 64).messages] == [offset]
        assert {m.commit_log_offset for m in store.query("TopicA", "k1", 64).messages if m.keys == "k1"} \
            == {*offsets[:2], *new}
        report = verify_store(store)
        assert report.ok, [str(p) for p in report.problems]
    finally:
        store.close()


def test_a_read_only_open_of_such_a_crash_leaves_the_index_files_as_found(tmp_path: Path) -> None:
    # the same crash opened read-only (a Spark scan or `store dump` of a broker's live directory): the open
    # works and writes nothing into the index files, whose ends the next writable open pulls back
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]
        assert store.wait_dispatched()
        store.flush()
        shutil.copytree(tmp_path / "live", tmp_path / "crashed")
    finally:
        store.close()
    _zero(tmp_path / "crashed", offsets[2])
    before = _end_offsets_on_disk(tmp_path / "crashed")
    assert max(before) > offsets[2]
    reader = MessageStore.open(tmp_path / "crashed", CONFIG, read_only=True)
    try:
        assert reader.recovery.abnormal
        assert reader.max_commit_log_offset == offsets[2]
        # its own view is cut as a writable open's is: the lost records' entries undone in memory
        assert _index_hits(reader, "TopicA", "k1") == offsets[:2]
        assert _index_hits(reader, "TopicA", "U000003") == []
    finally:
        reader.close()
    assert _end_offsets_on_disk(tmp_path / "crashed") == before


def test_the_index_files_pulled_back_still_sync_what_is_indexed_into_them_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a full file, then an empty newest one (rolled by a keyless record); the crash cuts below the full one's
    # end, so both are pulled back.  Their headers are synced then, and the entries indexed into them after
    # that are synced by the clean close (review of a8df362: flushing the header through IndexFile.flush
    # counted the whole file flushed, and the close synced nothing of it)
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(3)]
        offsets.append(_put(store, Message.create("TopicA", b"", uniq_key="U000003", queue_id=0)))
        assert store.wait_dispatched()
        offsets.append(_put(store, Message.create("TopicA", b"x", queue_id=0)))  # no key: the next file
        store = _crash(store, tmp_path / "live", tmp_path / "crashed", offsets[2])
        assert _end_offsets_on_disk(tmp_path / "crashed") == [offsets[2], offsets[2]]  # synced at recovery
        [_put(store, Message.create("TopicA", b"", uniq_key=f"N{n}", queue_id=0)) for n in range(3)]
        assert store.wait_dispatched()
        paths = [f.path for f in store._index.files]
        assert len(paths) == 2
        synced: list[str] = []
        fdatasync = os.fdatasync

        def spy(fd: int) -> None:
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            fdatasync(fd)

        monkeypatch.setattr(os, "fdatasync", spy)
    finally:
        store.close()
    assert set(paths) <= set(synced)


def _index_hits(store: MessageStore, topic: str, key: str) -> list[int]:
    """The commitlog offsets the index itself holds under *key* (the store's query answers each once)."""
    return sorted(store._index.query(topic, key, 64, 0, 2**62)[0])


def test_a_record_written_again_where_a_lost_one_of_the_same_key_was_is_indexed_once(tmp_path: Path) -> None:
    # the crash takes records at offsets[2] and offsets[3]; the next records land at offsets[2] (the same key
    # k1) and past it: the lost records' entries are undone, so k1 holds each record once (review2 finding 2)
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]
        store = _crash(store, tmp_path / "live", tmp_path / "crashed", offsets[2])
        new = [_put(store, _plain(n)) for n in (10, 11)]
        assert new[0] == offsets[2]
        assert store.wait_dispatched()
        assert _index_hits(store, "TopicA", "k1") == [*offsets[:2], *new]
        assert _index_hits(store, "TopicA", "U000002") == []  # a lost record's key: gone with it
        assert _index_hits(store, "TopicA", "U000010") == [new[0]]
        assert [m.commit_log_offset for m in store.query("TopicA", "k1", 64).messages] == [*offsets[:2], *new]
    finally:
        store.close()


def test_the_undone_entries_stay_undone_on_disk_and_a_second_crash_keeps_what_was_indexed_before(
        tmp_path: Path) -> None:
    # nothing indexed below the cut is lost, and the next recovery (a crash right after the first) reads
    # the pulled-back header and undone slots from disk
    store = MessageStore.open(tmp_path / "gen0", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]
        store = _crash(store, tmp_path / "gen0", tmp_path / "gen1", offsets[2])
        store = _crash(store, tmp_path / "gen1", tmp_path / "gen2", None)
        new = [_put(store, _plain(n)) for n in (10, 11)]
        assert store.wait_dispatched()
        assert _index_hits(store, "TopicA", "k1") == [*offsets[:2], *new]
        for n, offset in ((0, offsets[0]), (1, offsets[1]), (10, new[0]), (11, new[1])):
            assert _index_hits(store, "TopicA", f"U{n:06d}") == [offset]
        report = verify_store(store)
        assert report.ok, [str(p) for p in report.problems]
    finally:
        store.close()


def test_a_power_loss_between_the_undone_slots_and_the_header_is_undone_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the undone slots are synced before the header that shrinks the count: the disk as the first sync left
    # it (old count, slots back) is what a power loss there keeps, and the next recovery undoes it again to
    # the same index, losing nothing indexed below the cut
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]
        assert store.wait_dispatched()
        store.flush()
        shutil.copytree(tmp_path / "live", tmp_path / "crashed")
    finally:
        store.close()
    _zero(tmp_path / "crashed", offsets[2])
    shutil.copytree(tmp_path / "crashed", tmp_path / "power-lost")
    first = sorted((tmp_path / "crashed" / "index").iterdir())[0]  # full, it straddles the cut
    count_before = INDEX_HEADER.unpack(first.read_bytes()[:INDEX_HEADER.size])[5]
    images: list[bytes] = []
    fdatasync = os.fdatasync

    def spy(fd: int) -> None:
        fdatasync(fd)
        if os.readlink(f"/proc/self/fd/{fd}") == str(first):
            images.append(first.read_bytes())

    monkeypatch.setattr(os, "fdatasync", spy)
    store = MessageStore.open(tmp_path / "crashed", CONFIG)
    monkeypatch.undo()
    try:
        assert store.wait_dispatched()
        assert len(images) == 2
        slots = slice(INDEX_HEADER.size, INDEX_HEADER.size + 4 * 4)
        assert INDEX_HEADER.unpack(images[0][:INDEX_HEADER.size])[5] == count_before  # the header not yet
        assert images[0][slots] == images[1][slots]  # the slots already back
        assert INDEX_HEADER.unpack(images[1][:INDEX_HEADER.size])[3] == offsets[2]
    finally:
        store.close()
    (tmp_path / "power-lost" / "index" / first.name).write_bytes(images[0])
    store = MessageStore.open(tmp_path / "power-lost", CONFIG)
    try:
        assert store.recovery.abnormal and store.max_commit_log_offset == offsets[2]
        assert _index_hits(store, "TopicA", "k1") == offsets[:2]
        new = _put(store, _plain(10))
        assert store.wait_dispatched()
        assert _index_hits(store, "TopicA", "k1") == [*offsets[:2], new]
        assert _index_hits(store, "TopicA", "U000002") == []
        assert _index_hits(store, "TopicA", "U000001") == [offsets[1]]
    finally:
        store.close()


def test_a_crash_that_tears_the_newest_indexed_record_undoes_its_entries(tmp_path: Path) -> None:
    # (review) the index's end is the START of the last record indexed: a torn tail that takes exactly that
    # record cuts at the end itself, and its entries must go too, else the producer's retry of it, landing at
    # the same offset with the same keys, is found twice
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, Message.create("TopicA", b"", uniq_key="U000000", queue_id=0))]
        offsets += [_put(store, _plain(n)) for n in (1, 2, 3)]  # 1 + 3 x 2 keys: the first file full at r3
        assert store.wait_dispatched()
        _put(store, Message.create("TopicA", b"x", queue_id=0))  # keyless: rolls an empty second file
        store = _crash(store, tmp_path / "live", tmp_path / "crashed", offsets[3])  # r3 torn: cut == its start
        assert _index_hits(store, "TopicA", "U000003") == []
        again = _put(store, _plain(3))  # the producer's retry of r3 lands where it was
        assert again == offsets[3]
        assert store.wait_dispatched()
        assert _index_hits(store, "TopicA", "U000003") == [again]
        assert _index_hits(store, "TopicA", "k1") == [*offsets[1:3], again]
    finally:
        store.close()


def test_a_full_older_file_with_covered_holes_keeps_its_entries_and_a_new_file_takes_the_new_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (review) a full older file whose holes were covered (a sparse Java index where reading a hole allocates)
    # must not be written again: a slot restored into a covered page would never reach the file.  Its
    # entries stay, its end goes back, and it stays full, so building rolls a new file for the new records
    store = MessageStore.open(tmp_path / "live", CONFIG)
    try:
        offsets = [_put(store, _plain(n)) for n in range(4)]  # 8 keys: the first file full, a second opened
        assert store.wait_dispatched()
        first = sorted((tmp_path / "live" / "index").iterdir())[0].name
        monkeypatch.setattr(MappedFile, "cover_holes", lambda self: True)
        store = _crash(store, tmp_path / "live", tmp_path / "crashed", offsets[2])
        before = (tmp_path / "live" / "index" / first).read_bytes()
        after = (tmp_path / "crashed" / "index" / first).read_bytes()
        assert after[INDEX_HEADER.size:] == before[INDEX_HEADER.size:]  # no slot or entry written
        assert INDEX_HEADER.unpack(after[:INDEX_HEADER.size])[3] == offsets[2]  # the end pulled back
        new = [_put(store, _plain(n)) for n in (10, 11)]
        assert new[0] == offsets[2]
        assert store.wait_dispatched()
        for n, offset in zip((10, 11), new):
            assert _index_hits(store, "TopicA", f"U{n:06d}") == [offset]
        assert len(store._index.files) == 2 and store._index.files[0].name == first
    finally:
        store.close()
