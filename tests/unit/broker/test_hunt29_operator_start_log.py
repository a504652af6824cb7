"""A broker's start says how it found its store: after a kill -9 (the abort file left) a WARNING naming the
abnormal shutdown and where the commitlog was recovered to; after a clean stop an INFO line (and the stop
itself says it closed the store cleanly).

Found running `rocketstore serve -v` as an operator after SIGTERM and kill -9: neither start logged a word
about the store (4.9.3's store.log says whether the last shutdown was abnormal and where recovery ended), so
the log of a broker that came back from a crash looked the same as after a clean stop."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.broker import Broker, BrokerConfig


def _start_and_close(root: Path) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig(namesrv_addr="", listen_port=0, listen_host="127.0.0.1",
                                     broker_ip1="127.0.0.1"),
                        StoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=1 << 20))
        await broker.start()
        await broker.close()
    asyncio.run(main())


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "rocketstore.broker.broker" and "opened" in r.getMessage()]


def test_a_start_after_a_crash_warns_and_a_clean_one_informs(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    cfg = StoreConfig(mapped_file_size_commit_log=1 << 20)
    store = MessageStore.open(tmp_path, cfg)
    for i in range(3):
        store.put(Message.create("T", b"m%d" % i, queue_id=0))
    store.wait_dispatched()
    store.close()
    (tmp_path / "abort").write_bytes(b"")  # what a kill -9 leaves
    caplog.set_level(logging.INFO, logger="rocketstore.broker.broker")
    _start_and_close(tmp_path)
    [crash] = _records(caplog)
    assert crash.levelno == logging.WARNING
    assert "abnormal" in crash.getMessage() and "3 records checked" in crash.getMessage()
    caplog.clear()
    _start_and_close(tmp_path)
    [clean] = _records(caplog)
    assert clean.levelno == logging.INFO and "last shutdown clean" in clean.getMessage()
    # ... and the stop says it closed the store cleanly (a clean stop and a crash read apart in the log)
    closed = [r for r in caplog.records
              if r.name == "rocketstore.broker.broker" and "closed cleanly" in r.getMessage()]
    assert len(closed) == 1 and closed[0].levelno == logging.INFO
