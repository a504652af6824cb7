"""Retention's min-offset correction of a consume queue racing the dispatcher (hunt 23, retention2).

A queue whose every entry points below the commitlog's new first byte has its min offset moved to the end
of what the correction read.  It took the queue's end read afterwards instead, so an entry the dispatcher
added meanwhile (a new message to a long-idle queue, at the moment of a retention pass) ended below the
min offset: consumers were told OFFSET_TOO_SMALL and jumped past a message they never got.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.store.consume_queue import ConsumeQueue
from rocketstore.store.mapped_file import MappedFile


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[ConsumeQueue]:
    cq = ConsumeQueue("Idle", 0, str(tmp_path / "Idle" / "0"), 20 * 8, writable=True)
    for i in range(5):
        assert cq.put(i * 100, 100, 0, i)
    yield cq
    cq.close()


def _dispatch_during_the_scan(monkeypatch: pytest.MonkeyPatch, cq: ConsumeQueue, new_entry_at: int) -> None:
    """The dispatcher appends the next entry while the correction reads the queue's segment (the
    interleaving the clean-up thread and the dispatch thread can take: neither holds a lock the other
    takes)."""
    real_read = MappedFile.read
    armed = [True]

    def read(self: MappedFile, pos: int, size_bytes: int) -> bytes:
        data = real_read(self, pos, size_bytes)
        if armed[0]:
            armed[0] = False
            assert cq.put(new_entry_at, 100, 0, cq.max_offset)
        return data

    monkeypatch.setattr(MappedFile, "read", read)


def test_an_entry_dispatched_during_the_correction_stays_above_the_min_offset(
        queue: ConsumeQueue, monkeypatch: pytest.MonkeyPatch) -> None:
    _dispatch_during_the_scan(monkeypatch, queue, new_entry_at=10_000)
    queue.correct_min_offset(5_000)  # every entry so far points below the commitlog's first byte
    monkeypatch.undo()
    assert queue.max_offset == 6
    assert queue.min_offset == 5  # the new message's entry: consumers are sent to it, not past it
    found = queue.entries(queue.min_offset, 8)
    assert found is not None and found[0]["offset"].tolist() == [10_000]


def test_an_entry_dispatched_during_the_correction_of_a_rolled_queue(
        queue: ConsumeQueue, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5, 8):  # the first segment is full: the next entry starts a new one
        assert queue.put(i * 100, 100, 0, i)
    _dispatch_during_the_scan(monkeypatch, queue, new_entry_at=10_000)
    queue.correct_min_offset(5_000)
    monkeypatch.undo()
    assert queue.max_offset == 9
    assert queue.min_offset == 8

