"""Config files written from two threads at once (the broker's periodic consumer-offset write runs on a
worker thread while shutdown, a slave sync or an admin request writes from another): every write succeeds
and the file is always one whole version, as 4.9.3's synchronized MixAll.string2File leaves it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rocketstore.broker.offsets import ConsumerOffsetTable
from rocketstore.files import write_text_atomically


def test_two_threads_writing_one_file_both_succeed_and_leave_a_whole_file(tmp_path: Path) -> None:
    path = str(tmp_path / "consumerOffset.json")
    texts = [json.dumps({"offsetTable": {f"T@g{i}": {str(q): q * 7 for q in range(100 + 50 * i)}}})
             for i in range(2)]
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        for _ in range(200):
            try:
                write_text_atomically(path, texts[i])
            except BaseException as exc:  # noqa: BLE001 - collected and asserted on below
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Path(path).read_text(encoding="utf-8") in texts
    assert Path(path + ".bak").read_text(encoding="utf-8") in texts


def test_offsets_persisted_from_two_threads_end_with_the_latest_table(tmp_path: Path) -> None:
    table = ConsumerOffsetTable(str(tmp_path))
    errors: list[BaseException] = []

    def persist() -> None:
        for _ in range(100):
            try:
                table.persist(force=True)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=persist) for _ in range(2)]
    for t in threads:
        t.start()
    for offset in range(2000):
        table.commit("g", "T", offset % 4, offset)
    for t in threads:
        t.join()
    table.persist(force=True)
    assert errors == []
    reloaded = ConsumerOffsetTable(str(tmp_path))
    reloaded.load()
    assert reloaded.offsets("g", "T") == table.offsets("g", "T")
