"""delayOffset.json on a disk that refuses the write (a directory where the atomic write's .tmp goes, as a full
disk fails it): the schedule service tries again every flushDelayOffsetInterval until it is written, as 4.9.3's
ScheduleMessageService persists on its timer whatever happened before, and logs the failure once (and its
recovery once), not a traceback every interval."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, run_within  # noqa: E402

from rocketstore.client import Producer  # noqa: E402

SCHEDULE_LOGGER = "rocketstore.broker.schedule"


def test_a_delay_offset_write_that_fails_is_retried_and_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=SCHEDULE_LOGGER)
    config_dir = tmp_path / "store" / "config"
    delay_json = config_dir / "delayOffset.json"
    blocker = config_dir / "delayOffset.json.tmp"

    def records(level: int) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.levelno == level and r.name == SCHEDULE_LOGGER
                and str(delay_json) in r.getMessage()]

    overrides = {"message_delay_level": " ".join(["1s"] * 18), "flush_delay_offset_interval_ms": 100}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        cluster.create_topic("Hunt17Delayed", 1)
        config_dir.mkdir(parents=True, exist_ok=True)
        blocker.mkdir()

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "hunt17-delay-writer") as producer:
                await producer.send("Hunt17Delayed", b"later", properties={"DELAY": "1"})

        run_within(send, 30)
        deadline = time.monotonic() + 30
        # delivered (the level's offset moves), then tried every interval: one ERROR, the same failure as DEBUG
        while len(records(logging.ERROR)) + len(records(logging.DEBUG)) < 4:
            assert time.monotonic() < deadline, "delayOffset.json was not tried again after its write failed"
            time.sleep(0.05)
        assert len(records(logging.ERROR)) == 1
        assert not [r for r in caplog.records if r.exc_info and r.name == SCHEDULE_LOGGER], "a traceback"

        blocker.rmdir()
        while not (delay_json.exists() and records(logging.WARNING)):
            assert time.monotonic() < deadline + 30, "delayOffset.json not written once it could be"
            time.sleep(0.05)
        assert '"offsetTable"' in delay_json.read_text()
        assert len(records(logging.ERROR)) == 1 and len(records(logging.WARNING)) == 1
