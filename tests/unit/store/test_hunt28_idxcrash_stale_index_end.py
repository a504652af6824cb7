"""A crash that takes records the index already holds leaves the index's end offset (the newest file's
endPhyOffset, below which building skips records as already indexed) past the recovered commitlog end.
Recovery dropped the files that begin past the cut but kept that end, so the records written next, where
the lost ones were, got no index entries: a key query missed them and ``verify_store`` reported
INDEX_KEY_NOT_FOUND (found by tests/property/test_hunt22_storemodel2_retention_model.py).  4.9.3 never
pulls the end back either (IndexService has no truncation) and leaves such records unindexed until the
commitlog grows past the old end; recovery here pulls the end of the files it keeps back to the cut.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.index_file import INDEX_HEADER
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


def _crash(store: MessageStore, live: Path, crashed: Path, zero_from: int) -> MessageStore:
    """Copy the open store as a crash leaves it, with the commitlog zeroed from *zero_from* (a record torn
    at its first byte), and open the copy (abnormal recovery)."""
    assert store.wait_dispatched()
    store.flush()
    shutil.copytree(live, crashed)
    store.close()
    segment = crashed / "commitlog" / f"{zero_from - zero_from % SEGMENT:020d}"
    with open(segment, "r+b") as f:
        f.seek(zero_from % SEGMENT)
        f.write(bytes(SEGMENT - zero_from % SEGMENT))
    reopened = MessageStore.open(crashed, CONFIG)
    assert reopened.recovery.abnormal
    assert reopened.wait_dispatched()
    return reopened


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
    segment = tmp_path / "crashed" / "commitlog" / f"{offsets[2] - offsets[2] % SEGMENT:020d}"
    with open(segment, "r+b") as f:
        f.seek(offsets[2] % SEGMENT)
        f.write(bytes(SEGMENT - offsets[2] % SEGMENT))
    before = _end_offsets_on_disk(tmp_path / "crashed")
    assert max(before) > offsets[2]
    reader = MessageStore.open(tmp_path / "crashed", CONFIG, read_only=True)
    try:
        assert reader.recovery.abnormal
        assert reader.max_commit_log_offset == offsets[2]
    finally:
        reader.close()
    assert _end_offsets_on_disk(tmp_path / "crashed") == before
