"""Index files damaged on disk (flipped bytes): a query answers from what it can read and never hangs or
raises (RocketMQ's selectPhyOffset logs a bad read and returns what it found)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.index_file import INDEX_ENTRY, INDEX_HEADER
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import QueryResult

# one hash slot: every key of the file is on one chain
CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 16, max_hash_slot_num=1, max_index_num=50)
_ENTRIES_AT = 40 + 4


def _write_store(path: Path, count: int) -> None:
    with MessageStore.open(path, CONFIG) as store:
        for i in range(count):
            assert store.put(Message.create("T", b"body", keys=f"k{i}")).ok
        assert store.wait_dispatched()


def _index_file(path: Path) -> str:
    (name,) = os.listdir(path / "index")
    return str(path / "index" / name)


def _query_in_thread(store: MessageStore, key: str) -> QueryResult | BaseException | None:
    """store.query on another thread (a hang must fail the test, not stop the run)."""
    answer: list[QueryResult | BaseException] = []

    def run() -> None:
        try:
            answer.append(store.query("T", key))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            answer.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    return answer[0] if answer else None


def test_an_index_chain_that_links_forward_ends_instead_of_looping(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _write_store(path, 5)
    # each message gives two entries (UNIQ_KEY, then its key): entry 2 (k0) links back to entry 1; a flipped
    # link sends it forward to entry 4, whose chain leads back to 2: a cycle
    with open(_index_file(path), "r+b") as f:
        at = _ENTRIES_AT + 2 * 20
        f.seek(at)
        key_hash, offset, time_diff, prev = INDEX_ENTRY.unpack(f.read(20))
        assert prev == 1
        f.seek(at)
        f.write(INDEX_ENTRY.pack(key_hash, offset, time_diff, 4))
    with MessageStore.open(path, CONFIG) as store:
        answer = _query_in_thread(store, "absent-key")
        assert isinstance(answer, QueryResult), answer
        assert answer.messages == ()
        # the chain down to the damaged link still answers
        hits = _query_in_thread(store, "k3")
        assert isinstance(hits, QueryResult), hits
        assert [m.keys for m in hits.messages] == ["k3"]


def test_an_index_slot_and_count_past_the_file_find_nothing_instead_of_raising(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _write_store(path, 5)
    with open(_index_file(path), "r+b") as f:
        header = list(INDEX_HEADER.unpack(f.read(INDEX_HEADER.size)))
        header[5] = 1 << 30  # indexCount
        f.seek(0)
        f.write(INDEX_HEADER.pack(*header))
        f.seek(40)
        f.write((1 << 20).to_bytes(4, "big"))  # the one slot, pointing far past the file's entries
    with MessageStore.open(path, CONFIG, read_only=True) as store:
        answer = _query_in_thread(store, "k1")
        assert isinstance(answer, QueryResult), answer
        assert answer.messages == ()
