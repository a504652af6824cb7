"""The pipeline report's consumer lag reads a damaged config/consumerOffset.json as the broker does: its
``.bak`` when the file is empty or unreadable, a number that is none left out (no ValueError / OverflowError
from int()), CorruptFileError when the ``.bak`` is unreadable too.  No Spark session: consumer_lag opens the
store read-only and reads the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketstore.errors import CorruptFileError
from rocketstore.message.record import Message
from rocketstore.spark.report import consumer_lag
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

GOOD = json.dumps({"offsetTable": {"T@g": {"0": 1}}})


def _store(tmp_path: Path) -> Path:
    """A store (tmp_path/store) holding three messages of topic T in queue 0, and an empty config/."""
    path = tmp_path / "store"
    with MessageStore.open(path, StoreConfig(mapped_file_size_commit_log=1 << 16,
                                             mapped_file_size_consume_queue=20 * 64)) as store:
        for _ in range(3):
            assert store.put(Message.create("T", b"body", queue_id=0)).ok
        assert store.wait_dispatched()
    (path / "config").mkdir()
    return path


def _lags(path: Path) -> dict[tuple[str, str, int], tuple[int, int]]:
    return {(g.group, g.topic, g.queue_id): (g.committed_offset, g.max_offset)
            for g in consumer_lag(str(path))}


@pytest.mark.parametrize("damaged", ["", "{\"offsetTable\":{\"T@g\":{\"0\":1", "\xff\xfe"])
def test_an_empty_or_unreadable_file_reads_the_bak(tmp_path: Path, damaged: str) -> None:
    path = _store(tmp_path)
    (path / "config" / "consumerOffset.json").write_bytes(damaged.encode("latin-1"))
    (path / "config" / "consumerOffset.json.bak").write_text(GOOD, encoding="utf-8")
    assert _lags(path) == {("g", "T", 0): (1, 3)}


@pytest.mark.parametrize("number", ["\"x\"", "1e400", "Infinity", "null", "[1]"])
def test_an_offset_that_is_no_number_is_left_out(tmp_path: Path, number: str) -> None:
    path = _store(tmp_path)
    (path / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"T@g":{"0":%s,"1":2},"T@h":{"0":0}}}' % number, encoding="utf-8")
    assert _lags(path) == {("g", "T", 1): (2, 0), ("h", "T", 0): (0, 3)}


def test_an_unreadable_file_and_bak_are_a_corrupt_file_error(tmp_path: Path) -> None:
    path = _store(tmp_path)
    (path / "config" / "consumerOffset.json").write_text("{not json", encoding="utf-8")
    (path / "config" / "consumerOffset.json.bak").write_text("{not json either", encoding="utf-8")
    with pytest.raises(CorruptFileError):
        consumer_lag(str(path))
