"""A DELAY level above the highest configured one is capped, and the stored record says the capped level, as
RocketMQ 4.9.3's CommitLog.asyncPutMessage writes it (it caps with msg.setDelayTimeLevel(maxDelayLevel) before
serialising the properties).  A consumer-side retry with many reconsumes asks for such levels."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore

SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                    max_index_num=64)


@pytest.mark.parametrize(("levels", "asked", "stored", "delay_ms"), [
    ("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", "99", "18", 7_200_000),
    ("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", "19", "18", 7_200_000),
    ("1s 5s", "7", "2", 5000),
    # within range the string is not rewritten (RocketMQ sets it only when capping)
    ("1s 5s 10s", "03", "03", 10_000),
    ("1s 5s 10s", "3", "3", 10_000),
])
def test_a_delay_level_past_the_highest_is_stored_as_the_highest(
        tmp_path: Path, levels: str, asked: str, stored: str, delay_ms: int) -> None:
    config = SMALL.replace(message_delay_level=levels)
    with MessageStore.open(tmp_path / "store", config) as store:
        result = store.put(Message.create("T", b"x", tags="a", properties={"DELAY": asked}, queue_id=1))
        assert result.ok
        record = store.message_at(result.commit_log_offset)
        assert record is not None
        assert (record.topic, record.queue_id) == (SCHEDULE_TOPIC, int(stored) - 1)
        assert record.properties["DELAY"] == stored
        assert (record.properties["REAL_TOPIC"], record.properties["REAL_QID"]) == ("T", "1")
        assert store.wait_dispatched()
        [(_, _, tags_code)] = store.queue_entries(SCHEDULE_TOPIC, int(stored) - 1, result.queue_offset, 1) or []
        assert tags_code == result.store_timestamp + delay_ms
