"""A dispatch listener that raises (a bug in the caller's callback) is logged and ignored: the dispatch
thread goes on building consume queues for later records, and the listener goes on hearing of them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20)


def _wait_for_max_offset(store: MessageStore, expected: int, timeout_s: float = 30.0) -> bool:
    """Whether queue T/0 reaches *expected* entries (the timeout only keeps a failing test from hanging)."""
    deadline = time.monotonic() + timeout_s
    while store.max_offset("T", 0) != expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_listener_that_raises_does_not_stop_dispatch(tmp_path: Path) -> None:
    heard: list[tuple[str, int, int]] = []

    def listener(topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int) -> None:
        heard.append((topic, queue_id, next_offset))
        if next_offset in (3, 13):  # one record of the single puts, one of the batch
            raise RuntimeError("bug in a listener")

    with MessageStore.open(tmp_path / "store", CONFIG) as store:
        store.add_dispatch_listener(listener)
        for i in range(10):
            assert store.put(Message.create("T", b"one")).ok
            # no wait_dispatched (it dispatches on the caller's thread): the dispatch thread must do it
            assert _wait_for_max_offset(store, i + 1), f"record {i} never dispatched"
        assert store.put_batch([Message.create("T", b"many") for _ in range(100)]).ok
        assert _wait_for_max_offset(store, 110)
        assert store.put(Message.create("T", b"last")).ok
        assert _wait_for_max_offset(store, 111)
        assert "rocketstore-dispatch" in {t.name for t in threading.enumerate()}
        assert [n for _, _, n in heard[:10]] == list(range(1, 11))
        assert heard[-1] == ("T", 0, 111)
        got = store.get("T", 0, 110)
        assert [m.body for m in got.messages] == [b"last"]
