"""The schedule service decides that a message is due from its consume-queue tagsCode, as 4.9.3's
DeliverDelayedMessageTimerTask does, over several consume-queue files: messages stored under
"1s 2s" are due 2 s after their store time when the store is reopened with level 2 an hour long.  And a
delayOffset.json entry that is no integer (an infinite or NaN float, a word) is left out of the loaded
table, the others kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketstore.broker.schedule import ScheduleService
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutResult

#: five consume-queue entries a file
CONFIG = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                     max_index_num=64)
COUNT = 12


def test_messages_are_due_at_their_tags_code_across_consume_queue_files(tmp_path: Path) -> None:
    path = tmp_path / "store"
    config = CONFIG.replace(store_path_root_dir=str(path), message_delay_level="1s 2s")
    with MessageStore.open(path, config) as store:
        for i in range(COUNT):
            assert store.put(Message("T", f"m{i}".encode(), {"DELAY": "2"}, 0)).ok
        assert store.wait_dispatched(10)
        last_stored = store.get(SCHEDULE_TOPIC, 1, COUNT - 1, 1).messages[0].store_timestamp

    reopened = config.replace(message_delay_level="1s 1h")
    with MessageStore.open(path, reopened) as store:
        async def deliver() -> bool:
            async def put(message: Message) -> PutResult:
                return store.put(message, apply_delay=False)

            service = ScheduleService(store, reopened.config_dir, put, lambda: last_stored + 2000)
            service.load()
            return await service.deliver_due(2)

        assert asyncio.run(deliver()) is True
        assert store.wait_dispatched(10)
        bodies = [m.body for offset in range(0, COUNT, 5) for m in store.get("T", 0, offset, 5).messages]
        assert bodies == [f"m{i}".encode() for i in range(COUNT)]


def test_a_delay_offset_that_is_no_integer_is_left_out_and_the_others_load(tmp_path: Path) -> None:
    path = tmp_path / "store"
    config = CONFIG.replace(store_path_root_dir=str(path))
    (path / "config").mkdir(parents=True)
    (path / "config" / "delayOffset.json").write_text('{"offsetTable":{1:1e400,2:NaN,3:"x",4:7}}', encoding="utf-8")
    with MessageStore.open(path, config) as store:
        async def put(message: Message) -> PutResult:
            return store.put(message, apply_delay=False)

        service = ScheduleService(store, config.config_dir, put, lambda: 0)
        service.load()  # an infinite offset was an OverflowError: the broker did not start
        assert service.offsets == {4: 7}
