"""close() from a listener on a store thread hands the close to a thread of its own only when the thread is
one of the closed store's (it cannot join itself).  A listener of store A that closes store B runs on A's
thread, which B's close can join everything from: B is closed when close() returns, as from any other
thread.  Before, store threads were told apart by name, so B's close returned with B still open."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rocketstore.errors import StoreClosedError
from rocketstore.message.record import Message
from rocketstore.store.message_store import MessageStore

from .test_hunt17_embedded_close_and_dirs import SMALL, SYNC, _close_within, _reopened_cleanly


def _close_and_look(other: MessageStore, seen: list[object]) -> None:
    """Close *other*, then note whether it answers reads still (it must not: it is closed)."""
    try:
        other.close()
        other.max_offset("B", 0)
        seen.append("still open")
    except StoreClosedError:
        seen.append("closed")
    except BaseException as exc:  # noqa: BLE001 - the test reports it
        seen.append(exc)


@pytest.mark.parametrize("listener", ["dispatch", "durable"])
def test_a_listener_of_one_store_closing_another_closes_it_before_returning(tmp_path: Path, listener: str) -> None:
    config = SYNC if listener == "durable" else SMALL
    a = MessageStore.open(tmp_path / "a", config)
    b = MessageStore.open(tmp_path / "b", config)
    seen: list[object] = []
    called = threading.Event()

    def on_durable() -> None:
        if not called.is_set():
            _close_and_look(b, seen)
            called.set()

    def on_dispatch(topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int) -> None:
        on_durable()

    try:
        assert b.put(Message.create("B", b"b")).ok
        if listener == "durable":
            a.add_durable_listener(on_durable)
            assert a.put(Message.create("A", b"a"), flush="ask").ok  # a's group commit thread syncs it
        else:
            a.add_dispatch_listener(on_dispatch)
            assert a.put(Message.create("A", b"a")).ok
        assert called.wait(30)
        assert seen == ["closed"]
        assert not (tmp_path / "b" / "abort").exists()  # a clean close of b, done when close() returned
    finally:
        _close_within(a)
        _close_within(b)
    assert _reopened_cleanly(tmp_path / "b", config, "B") == 1
    assert _reopened_cleanly(tmp_path / "a", config, "A") == 1
