"""A key look-up (``query``) running while the dispatcher indexes new records finds every key already
indexed.  The index writers published a run's entries through the hash slots before raising the file's
entry count, so for that moment a slot named an entry past the count; the look-up takes such a slot for a
stale one (as 4.9.3's selectPhyOffset does) and answered "no such key" for every earlier key sharing the
slot: an acknowledged, dispatched message was intermittently not found by its key.  (4.9.3's putKey writes
the slot with the count the new entry takes before it counts it, so the slot never runs ahead.)"""

from __future__ import annotations

import threading
from pathlib import Path

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

# few slots: every run of new keys lands on the slots of the keys looked up, which stay in the index file
# being written (one file holds them all); small commitlog segments: they roll meanwhile
CONFIG = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 200,
                     max_index_num=200_000, max_hash_slot_num=64)
WRITERS = 2
PUTS = 1500


def test_query_finds_indexed_keys_while_new_records_are_indexed(tmp_path: Path, fast_switching: None) -> None:
    with MessageStore.open(tmp_path / "store", CONFIG) as store:
        #: (key, commitlog offset) of puts acknowledged and dispatched: each must be found from then on
        known: list[tuple[str, int]] = []
        done = threading.Event()
        misses: list[str] = []
        lookups = 0

        def write(writer: int) -> None:
            for i in range(PUTS):
                if i % 25 == 0:  # a batch: a long dispatch run (the vectorised index writer)
                    batch = [Message.create("T", b"b" * 20, queue_id=writer, keys=f"b{writer}-{i}-{k}")
                             for k in range(40)]
                    assert store.put_batch(batch).ok
                result = store.put(Message.create("T", b"v" * 20, queue_id=writer, keys=f"w{writer}-{i}"))
                assert result.ok
                if writer == 0 and i % 20 == 0:
                    assert store.wait_dispatched()
                    known.append((f"w{writer}-{i}", result.commit_log_offset))

        def look_up() -> None:
            nonlocal lookups
            while not done.is_set():
                for key, offset in known[-4:]:
                    found = [m.commit_log_offset for m in store.query("T", key, 4).messages]
                    lookups += 1
                    if offset not in found:
                        misses.append(key)

        writers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        reader = threading.Thread(target=look_up)
        reader.start()
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        done.set()
        reader.join()
        assert lookups > 0
        assert misses == [], f"{len(misses)} of {lookups} look-ups missed an indexed key"
