"""One consume-queue file cut short must not set the consume-queue size that ``rocketstore store verify`` /
``dump`` and the Spark store source detect for the whole store: the first queue in name order holds a few
messages in one file, so that file alone made every good queue "the wrong size" (a StoreConfigError naming a
healthy file), and a store that a crash left so could not be read at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.cli.main import main
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.snapshot import consume_queue_bytes_on_disk

CQ_BYTES = 20 * 8
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 14, mapped_file_size_consume_queue=CQ_BYTES)


def _store_with_a_short_first_queue_file(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "store"
    with MessageStore.open(path, CONFIG) as store:
        for topic in ("A", "B", "C"):
            for i in range(3):
                assert store.put(Message.create(topic, f"{topic}{i}".encode(), queue_id=0)).ok
        assert store.wait_dispatched()
    first = path / "consumequeue" / "A" / "0" / f"{0:020d}"
    assert sorted(os.listdir(path / "consumequeue" / "A" / "0")) == [first.name]
    with open(first, "r+b") as f:
        f.truncate(3 * 20)
    return path, first


def test_the_detected_size_is_the_common_one_not_the_first_queues(tmp_path: Path) -> None:
    path, _ = _store_with_a_short_first_queue_file(tmp_path)
    assert consume_queue_bytes_on_disk(str(path / "consumequeue")) == CQ_BYTES


def test_verify_names_the_short_file_after_a_clean_shutdown(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, first = _store_with_a_short_first_queue_file(tmp_path)
    code = main(["store", "verify", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert os.path.join("A", "0", first.name) in err and f"has {3 * 20} bytes" in err, err


def test_a_crashed_store_with_a_short_first_queue_file_reads_read_only(tmp_path: Path) -> None:
    path, _ = _store_with_a_short_first_queue_file(tmp_path)
    (path / "abort").write_bytes(b"")  # a crash: a short last queue file is a torn tail, recovered
    detected = consume_queue_bytes_on_disk(str(path / "consumequeue"))
    config = CONFIG.replace(mapped_file_size_consume_queue=detected)
    with MessageStore.open(path, config, read_only=True) as store:
        for topic in ("A", "B", "C"):
            got = store.get(topic, 0, 0)
            assert [m.body for m in got.messages] == [f"{topic}{i}".encode() for i in range(3)]
