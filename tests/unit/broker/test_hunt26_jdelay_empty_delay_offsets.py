"""A master that has delivered no delayed message yet writes config/delayOffset.json at its first flush all
the same, its table empty, as 4.9.3 does (its ScheduleMessageService persists the table at every flush,
whatever it holds).  We wrote the file only once a level had delivered something."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketstore.broker.schedule import ScheduleService
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutResult

CONFIG = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                     max_index_num=64, flush_delay_offset_interval_ms=100, message_delay_level="1s 2s 3s")

#: config/delayOffset.json of a 4.9.3 broker started on a new store ("1s 2s 3s"), 10 s on (captured from 4.9.3)
JAVA_EMPTY_DELAY_OFFSETS = '{\n\t"offsetTable":{}\n}'


def test_a_new_master_writes_an_empty_delay_offset_table(tmp_path: Path) -> None:
    path = tmp_path / "store"
    config = CONFIG.replace(store_path_root_dir=str(path))
    written = path / "config" / "delayOffset.json"
    with MessageStore.open(path, config) as store:
        async def run() -> None:
            async def put(message: Message) -> PutResult:
                return store.put(message, apply_delay=False)

            service = ScheduleService(store, config.config_dir, put, lambda: 0)
            service.load()
            service.start()
            try:
                for _ in range(100):  # the first flush is 100 ms on
                    if written.exists():
                        break
                    await asyncio.sleep(0.05)
            finally:
                await service.close()

        asyncio.run(run())
    assert written.exists(), "no delayOffset.json written at the first flush"
    assert written.read_text(encoding="utf-8") == JAVA_EMPTY_DELAY_OFFSETS
