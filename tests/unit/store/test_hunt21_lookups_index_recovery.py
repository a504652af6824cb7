"""Key queries after a crash that left the newest index file with a zeroed header.

A new index file is created at full size, renamed into place and mapped, and only then gets its header (begin
and end taken from the file before it).  A kill -9 in between leaves a newest file of zeros: no entries, and
endPhyOffset 0.  Abnormal recovery's re-dispatch skips the records below the newest file's endPhyOffset, so
with 0 it indexed every record it walked a second time (each key query answered each message twice).

The last record indexed before the crash (the one at the endPhyOffset of the file before) is indexed again,
as 4.9.3's buildIndex does (it skips only records *below* endPhyOffset; the golden killed store shows it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore.message.host import parse_host
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

# maxIndexNum=5: four keys fill a file
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, max_hash_slot_num=8, max_index_num=5)
HOST = parse_host("10.0.0.1:10911")
T0 = 1_700_000_000_000


def _message(i: int, keys: str | None) -> Message:
    ts = T0 + i * 1000
    return Message.create("T", b"x", keys=keys, store_timestamp=ts, born_timestamp=ts, born_host=HOST,
                          store_host=HOST)


def _crash_with_blank_newest_index_file(live: Path, crashed: Path) -> None:
    with MessageStore.open(live, CONFIG, background=False) as store:
        for i in range(8):
            assert store.put(_message(i, f"k{i}")).ok
        assert store.put(_message(8, None)).ok  # rolls the second full file: a third, empty one
        assert store.wait_dispatched()
        assert len(store._index.files) == 3 and store._index.files[-1].index_count == 1
        shutil.copytree(live, crashed)  # as a kill -9 leaves it (abort marker, page cache)
    assert (crashed / "abort").exists()
    newest = sorted((crashed / "index").iterdir())[-1]
    with open(newest, "r+b") as f:
        f.write(bytes(40))  # killed before the new file's header was written


def test_recovery_does_not_index_again_below_a_blank_newest_index_file(tmp_path: Path) -> None:
    _crash_with_blank_newest_index_file(tmp_path / "live", tmp_path / "crashed")
    with MessageStore.open(tmp_path / "crashed", CONFIG, background=False) as store:
        assert store.recovery.abnormal
        for i in range(7):
            hits = store.query("T", f"k{i}").messages
            assert [(m.keys, m.queue_offset) for m in hits] == [(f"k{i}", i)], i
        assert [m.queue_offset for m in store.query("T", "k7").messages] == [7, 7]  # 4.9.3's rule
        assert sum(f.index_count - 1 for f in store._index.files) == 9

