"""write_text_atomically serialises writes of one file, not of every file: the broker writes topics.json
(2 MB for 10,000 topics, two fsyncs) off its event loop while the loop writes delayOffset.json, and one lock
for all files made the loop wait for the big file.

A write held up for real: its ``.tmp`` is a named pipe, whose open blocks until a reader comes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from rocketstore.files import write_text_atomically

DEADLINE_S = 10.0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_write_held_up_on_one_file_does_not_hold_up_a_write_of_another(tmp_path: Path) -> None:
    big = tmp_path / "topics.json"
    os.mkfifo(str(big) + ".tmp")  # the big file's write blocks in open() until the pipe has a reader
    small = tmp_path / "delayOffset.json"
    held_errors: list[BaseException] = []

    def held_write() -> None:
        try:
            write_text_atomically(str(big), "{}")
        except OSError as exc:  # fsync of a pipe: the held write fails once let go, which is fine here
            held_errors.append(exc)

    holder = threading.Thread(target=held_write, daemon=True)
    holder.start()
    try:
        other = threading.Thread(target=write_text_atomically, args=(str(small), '{"offsetTable":{}}'), daemon=True)
        other.start()
        other.join(DEADLINE_S)
        assert not other.is_alive(), "the write of delayOffset.json waited for the write of topics.json"
        assert small.read_text(encoding="utf-8") == '{"offsetTable":{}}'
    finally:
        with open(str(big) + ".tmp", "rb") as reader:  # let the held write go
            reader.read()
        holder.join(DEADLINE_S)
    assert not holder.is_alive()


def test_writes_of_one_file_from_many_threads_leave_one_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    texts = [f'{{"writer":{i},"pad":"{"x" * 20000}"}}' for i in range(8)]
    threads = [threading.Thread(target=write_text_atomically, args=(str(path), text)) for text in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert path.read_text(encoding="utf-8") in texts
    assert not Path(str(path) + ".tmp").exists()
