"""A slave's store (commitlog bytes laid down by MessageStore.append_replica, as the HA client does) keeps
its checkpoint's physic timestamp current, so that its abnormal recovery starts from a recent segment as a
master's does, instead of re-checking the whole commitlog from segment 0."""

from __future__ import annotations

from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.checkpoint import Checkpoint
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.message_store import MessageStore

CONFIG = StoreConfig(mapped_file_size_commit_log=64 << 10, mapped_file_size_consume_queue=20 * 1000,
                     max_hash_slot_num=64, max_index_num=1024, preallocate_commit_log=False)
BASE_MS = 1_700_000_000_000


def _fill_master(path: Path, count: int) -> MessageStore:
    master = MessageStore.open(path, CONFIG)
    for i in range(count):  # 100 ms apart: the segments' first records are seconds apart
        assert master.put(Message("Replicated", bytes(1000), {"KEYS": f"k{i}"}, queue_id=i % 2,
                                  store_timestamp=BASE_MS + 100 * i)).ok
    return master


def _replicate(master: MessageStore, slave: MessageStore) -> None:
    offset = 0
    while offset < master.max_commit_log_offset:
        chunk = master.read_replica(offset, 32 << 10)
        assert chunk, f"nothing to read at {offset}"
        offset = slave.append_replica(offset, chunk)


def test_a_slave_recovers_abnormally_from_a_recent_segment_not_from_the_first(tmp_path: Path) -> None:
    count = 400  # ~0.4 MiB: 7 segments of 64 KiB
    slave_config = CONFIG.replace(broker_role=BrokerRole.SLAVE)
    with _fill_master(tmp_path / "master", count) as master, \
            MessageStore.open(tmp_path / "slave", slave_config) as slave:
        _replicate(master, slave)
        assert slave.wait_dispatched(30)
        slave.flush()
        end = slave.max_commit_log_offset
        assert end == master.max_commit_log_offset
    checkpoint = Checkpoint(str(tmp_path / "slave" / "checkpoint"), writable=False)
    assert checkpoint.physic_msg_timestamp == BASE_MS + 100 * (count - 1), "the newest replicated record's time"

    (tmp_path / "slave" / "abort").touch()  # as if the slave had died instead of closing
    with MessageStore.open(tmp_path / "slave", slave_config) as slave:
        report = slave.recovery
        assert report.abnormal and report.valid_end == end
        assert report.start_segment > 0, "recovery started from a segment the checkpoint vouches for"
        assert sum(slave.max_offset("Replicated", q) for q in (0, 1)) == count
        last = slave.get("Replicated", 1, slave.max_offset("Replicated", 1) - 1, 1).messages
        assert last[0].properties["KEYS"] == f"k{count - 1}"
