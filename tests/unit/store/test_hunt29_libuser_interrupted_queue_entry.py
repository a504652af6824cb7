"""A consume-queue entry whose write was interrupted (a KeyboardInterrupt: an embedded store's flush()
dispatches on the caller's thread) is written when the record is dispatched again.  The queue marked the
record as built before it wrote the entry: interrupted between the two, the entry was never written (the
record skipped as built already) and the queue's next record was refused as a gap ("expected entry N+1 but
holds N"), gets seeing nothing new until the store was opened again.  Found by interrupting a put / flush
loop at random moments: always at the first entry of a new queue file, the one the slow path writes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from rocketstore.store import consume_queue as consume_queue_module
from rocketstore.store.consume_queue import ConsumeQueue

SEGMENT = 20 * 4


class _InterruptedPack:
    """The entry struct, with a KeyboardInterrupt arriving as one pack() returns."""

    def __init__(self, real: struct.Struct) -> None:
        self.real = real
        self.armed = True

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def pack(self, *values: int) -> bytes:
        packed = self.real.pack(*values)
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return packed


def test_an_entry_interrupted_as_it_was_written_is_written_again(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path / "cq"), SEGMENT, writable=True)
    for i in range(4):  # one full file
        assert cq.put(100 * i, 100, 0, i)
    monkeypatch.setattr(consume_queue_module, "CQ_ENTRY", _InterruptedPack(consume_queue_module.CQ_ENTRY))
    with pytest.raises(KeyboardInterrupt):
        cq.put(400, 100, 0, 4)  # the first entry of the next file
    assert cq.put(400, 100, 0, 4)  # dispatched again
    assert cq.max_offset == 5
    assert cq.put(500, 100, 0, 5)  # before: False, a gap
    assert cq.entry(4) == (400, 100, 0)
    cq.files.close()
