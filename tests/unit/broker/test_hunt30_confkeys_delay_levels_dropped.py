"""messageDelayLevel shortened while delayed messages of a dropped level wait (sent with DELAY=3, the broker
restarted with "1s 2s"): 4.9.3 and this broker deliver the other levels and leave those messages in
SCHEDULE_TOPIC_XXXX until the level is back (compared against 4.9.3: a DELAY=3 and a DELAY=2 message, both
brokers restarted with "1s 2s", 14 s later 1 message delivered on each), and neither said a word: the
operator could not tell messages were held.  Now the start warns, naming the level, its queue and the count.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketstore.broker.schedule import ScheduleService
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutResult

CONFIG = StoreConfig(mapped_file_size_commit_log=64 * 1024, max_hash_slot_num=16, max_index_num=64)


def _load(store: MessageStore) -> None:
    async def put(message: Message) -> PutResult:
        return store.put(message, apply_delay=False)

    ScheduleService(store, store.config.config_dir, put, lambda: 0).load()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "messageDelayLevel has" in r.getMessage()]


def test_messages_of_a_level_the_configuration_no_longer_has_are_named_at_start(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "store"
    config = CONFIG.replace(store_path_root_dir=str(path))
    with MessageStore.open(path, config) as store:
        for level in ("3", "3", "2", "5"):
            assert store.put(Message("T", b"m", {"DELAY": level}, 0)).ok
        assert store.wait_dispatched(10)
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.schedule")
    with MessageStore.open(path, config.replace(message_delay_level="1s 2s")) as store:
        _load(store)
    warnings = _warnings(caplog)
    assert len(warnings) == 2
    assert warnings[0].startswith(f"2 delayed message(s) of delay level 3 wait in {SCHEDULE_TOPIC} queue 2")
    assert warnings[1].startswith(f"1 delayed message(s) of delay level 5 wait in {SCHEDULE_TOPIC} queue 4")
    # with every level configured (the default 18): nothing to say
    caplog.clear()
    with MessageStore.open(path, config) as store:
        _load(store)
    assert _warnings(caplog) == []
