"""verify_store on a live store that crash recovery cut and that has taken puts since."""

from __future__ import annotations

import shutil
from pathlib import Path

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.store.verify import verify_store

CONFIG = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=160)


def _crash_with_torn_last_record(tmp_path: Path) -> Path:
    """A crash copy of a store whose only record lost all but its first 4 bytes (a torn write)."""
    live, copy = tmp_path / "live", tmp_path / "copy"
    with MessageStore.open(live, CONFIG) as store:
        assert store.put(Message.create("T", b"torn")).ok
        store.flush()
        shutil.copytree(live, copy)  # keeps the abort marker: the copy opens as after a crash
    with open(copy / "commitlog" / f"{0:020d}", "r+b") as f:
        f.seek(4)
        f.write(bytes(4096 - 4))
    return copy


def test_records_written_after_a_crash_cut_are_not_taken_for_lost_ones(tmp_path: Path) -> None:
    copy = _crash_with_torn_last_record(tmp_path)
    with MessageStore.open(copy, CONFIG) as store:
        assert store.recovery.abnormal and store.recovery.truncated_bytes
        for body in (b"one", b"two"):
            assert store.put(Message.create("T", body)).ok
        assert store.wait_dispatched()
        report = verify_store(store)
        assert report.ok, [str(p) for p in report.problems]

