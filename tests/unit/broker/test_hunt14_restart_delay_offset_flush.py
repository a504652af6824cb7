"""flushDelayOffsetInterval (4.9.3's MessageStoreConfig, default 10 s): how often delayOffset.json is written.
A broker killed with kill -9 delivers again the delayed messages it delivered since the last write, so a
user who shortens the interval expects it to be used, and GET_BROKER_CONFIG to list it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker import schedule as schedule_module
from rocketstore.broker.schedule import ScheduleService
from rocketstore.broker.stats_admin import reported_config_text
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore


class _Stop(Exception):
    pass


def test_the_broker_conf_setting_is_read_and_reported() -> None:
    config = StoreConfig.from_properties({"flushDelayOffsetInterval": "1500", "storePathRootDir": "/tmp/none"})
    assert config.flush_delay_offset_interval_ms == 1500
    broker = Broker(BrokerConfig(broker_name="b"), config)
    assert parse_properties_text(reported_config_text(broker))["flushDelayOffsetInterval"] == "1500"
    default = Broker(BrokerConfig(broker_name="b"), StoreConfig(store_path_root_dir="/tmp/none"))
    assert parse_properties_text(reported_config_text(default))["flushDelayOffsetInterval"] == "10000"


def test_the_schedule_service_writes_delay_offsets_at_that_interval(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = StoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commit_log=1 << 16,
                         flush_delay_offset_interval_ms=250)
    slept: list[float] = []

    async def sleep(seconds: float, *args: Any) -> None:
        slept.append(seconds)
        raise _Stop

    async def put(message: Any) -> Any:
        raise AssertionError("nothing to deliver")

    with MessageStore.open(tmp_path, config, background=False) as store:
        service = ScheduleService(store, str(tmp_path / "config"), put, lambda: 0)
        monkeypatch.setattr(schedule_module.asyncio, "sleep", sleep)
        with pytest.raises(_Stop):
            asyncio.run(service._flush_loop())
    assert slept == [0.25]
