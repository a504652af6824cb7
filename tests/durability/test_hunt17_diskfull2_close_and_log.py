"""The broker's config files when a write keeps failing (a full disk; here a directory standing where the
write's ``.tmp`` file goes, which fails every write of that one file): at shutdown each file is still tried
(one failing skipped the others), and the periodic consumerOffset.json write logs a failure that goes on once,
not a traceback every flushConsumerOffsetInterval, and says when it is written again."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import pytest

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

from local_cluster import LocalCluster  # noqa: E402

from rocketstore.remoting.bodies import TopicConfig  # noqa: E402


def _offsets(path: Path) -> dict[str, object]:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))["offsetTable"])
    except (FileNotFoundError, ValueError, KeyError):
        return {}


def test_shutdown_writes_every_file_though_the_first_fails(tmp_path: Path) -> None:
    config_dir = tmp_path / "store" / "config"
    with LocalCluster(tmp_path / "store") as cluster:
        (config_dir / "delayOffset.json.tmp").mkdir()  # the first file close writes cannot be written
        cluster.call(lambda: cluster.broker.offsets.commit("G", "T", 0, 42))
        cluster.call(lambda: cluster.broker.topics.update(TopicConfig("MadeLast", 1, 1)))
    assert _offsets(config_dir / "consumerOffset.json") == {"T@G": {"0": 42}}
    topics = json.loads((config_dir / "topics.json").read_text(encoding="utf-8"))["topicConfigTable"]
    assert "MadeLast" in topics


def test_a_failing_offset_write_is_logged_once_and_its_recovery_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.broker")
    config_dir = tmp_path / "store" / "config"
    offsets_json = config_dir / "consumerOffset.json"
    blocker = config_dir / "consumerOffset.json.tmp"

    def about_offsets(level: int) -> list[logging.LogRecord]:
        # the periodic write is the broker's one thing logging at ERROR and DEBUG here
        return [r for r in caplog.records if r.levelno == level and r.name == "rocketstore.broker.broker"]

    with LocalCluster(tmp_path / "store", flush_consumer_offset_interval_ms=100) as cluster:
        blocker.mkdir()
        cluster.call(lambda: cluster.broker.offsets.commit("G", "T", 0, 7))
        deadline = time.monotonic() + 20
        # every attempt leaves a record (an ERROR or, for the same failure again, a DEBUG one)
        while len(about_offsets(logging.ERROR)) + len(about_offsets(logging.DEBUG)) < 5:
            assert time.monotonic() < deadline, "consumerOffset.json was not tried five times"
            time.sleep(0.05)
        assert len(about_offsets(logging.ERROR)) == 1
        assert str(offsets_json) in about_offsets(logging.ERROR)[0].getMessage()
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"

        blocker.rmdir()
        while _offsets(offsets_json) != {"T@G": {"0": 7}}:
            assert time.monotonic() < deadline + 20, "consumerOffset.json not written once it could be"
            time.sleep(0.05)
        cluster.call(lambda: None)
        deadline = time.monotonic() + 20
        while not about_offsets(logging.WARNING):
            assert time.monotonic() < deadline, "the recovery was not logged"
            time.sleep(0.05)
        assert len(about_offsets(logging.ERROR)) == 1 and len(about_offsets(logging.WARNING)) == 1
