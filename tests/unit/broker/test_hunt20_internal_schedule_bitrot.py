"""The schedule service meets a delayed message whose body rotted on disk: a clean open keeps a record that
fails its CRC (it was synced whole), so it reaches SCHEDULE_TOPIC_XXXX's reader.  Its delivery re-encoded the
changed body with a fresh CRC into the real topic, where every consumer then took it as intact (4.9.3's
lookMessageByOffset does not check the CRC either, and delivers it the same way).  It is now left in the
schedule queue, logged as an ERROR naming it, and the level goes on with the messages after it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketstore.broker.schedule import ScheduleService
from rocketstore.message.record import Message
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.config import StoreConfig
from rocketstore.store.results import PutResult

#: one commitlog segment: the damaged record is in the tail the clean open re-checks (and keeps)
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20)
COUNT = 4
DAMAGED = 1
#: a byte inside the body of a record with IPv4 hosts (its header is 88 bytes)
BODY_BYTE = 88 + 3


def _delayed_store_with_a_rotted_body(path: Path) -> None:
    """COUNT messages for T/0 at delay level 1, the store closed cleanly, then one bit of message DAMAGED's
    body flipped in the commitlog."""
    with MessageStore.open(str(path), CONFIG) as store:
        offsets = [store.put(Message("T", b"message %d" % i, {"DELAY": "1"}, 0)).commit_log_offset
                   for i in range(COUNT)]
        assert store.wait_dispatched()
    with open(path / "commitlog" / f"{0:020d}", "r+b") as segment:
        segment.seek(offsets[DAMAGED] + BODY_BYTE)
        byte = segment.read(1)[0]
        segment.seek(offsets[DAMAGED] + BODY_BYTE)
        segment.write(bytes([byte ^ 0x01]))


def test_a_delayed_message_whose_body_rotted_is_not_delivered_and_the_level_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _delayed_store_with_a_rotted_body(tmp_path)
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.recovery.damaged_records  # kept: the clean close synced it whole
        assert store.max_offset(SCHEDULE_TOPIC, 0) == COUNT

        async def put(message: Message) -> PutResult:
            return store.put(message, apply_delay=False)

        async def deliver() -> bool:
            service = ScheduleService(store, store.config.config_dir, put, lambda: 1 << 50)  # all due
            service.load()
            delivered = await service.deliver_due(1)
            assert service.offsets[1] == COUNT  # past the damaged one: the level is not held up by it
            return delivered

        with caplog.at_level(logging.ERROR, logger="rocketstore.broker.schedule"):
            assert asyncio.run(deliver()) is True
        assert store.wait_dispatched()
        delivered = store.get("T", 0, 0, 8).messages
        assert [m.body for m in delivered] == [b"message %d" % i for i in range(COUNT) if i != DAMAGED]
    [line] = [r.getMessage() for r in caplog.records if r.name == "rocketstore.broker.schedule"]
    assert f"{SCHEDULE_TOPIC} queue 0 queue offset {DAMAGED}" in line and "body CRC mismatch" in line
