"""put_batch answers a field it cannot store as put does, with MESSAGE_ILLEGAL, and writes nothing: a store
timestamp taken from ``time.time() * 1000`` (a float) or a sys flag that is no int used to escape as a raw
struct.error or TypeError."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rocketstore.message.batch import MessageBatch
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus
from rocketstore.store.verify import verify_store

SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                    max_index_num=64)
FLOAT_MS = time.time() * 1000

BAD_BATCHES = {
    "float store timestamp": lambda: [Message.create("T", b"a", store_timestamp=FLOAT_MS),
                                      Message.create("T", b"b", store_timestamp=FLOAT_MS)],
    "float store timestamp, messages that differ": lambda: [
        Message.create("T", b"a", store_timestamp=FLOAT_MS, born_timestamp=1),
        Message.create("T", b"b", store_timestamp=FLOAT_MS, born_timestamp=2)],
    "store timestamp past a long": lambda: [Message.create("T", b"a", store_timestamp=1 << 63)],
    "sys flag None": lambda: [Message.create("T", b"a", sys_flag=None)],
    "sys flag str": lambda: [Message.create("T", b"a", sys_flag="0"), Message.create("T", b"b", sys_flag="0")],
    "MessageBatch float store timestamp": lambda: MessageBatch("T", 0, [0], [b"a"], [b""],
                                                               store_timestamp=FLOAT_MS),
    "MessageBatch sys flag None": lambda: MessageBatch("T", 0, [0], [b"a"], [b""], sys_flag=None),
}


@pytest.mark.parametrize("name", sorted(BAD_BATCHES))
def test_a_batch_with_a_field_that_cannot_be_stored_is_message_illegal_and_writes_nothing(
        tmp_path: Path, name: str) -> None:
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        assert store.put(Message.create("T", b"before")).ok
        end = store.max_commit_log_offset
        assert store.put(Message.create("T", b"x", store_timestamp=FLOAT_MS)).status \
            is PutMessageStatus.MESSAGE_ILLEGAL  # what put answers
        result = store.put_batch(BAD_BATCHES[name]())
        assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_commit_log_offset == end
        after = store.put_batch([Message.create("T", b"after1"), Message.create("T", b"after2")])
        assert after.ok and after.queue_offset == 1
        assert store.wait_dispatched()
        assert [m.body for m in store.get("T", 0, 0).messages] == [b"before", b"after1", b"after2"]
        assert verify_store(store).ok
