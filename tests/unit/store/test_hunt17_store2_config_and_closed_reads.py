"""A maxMessageSize below 1 byte is refused as the other sizes are (StoreConfigError naming it): such a store
opened and answered every put MESSAGE_ILLEGAL.  ``topics()`` on a closed store raises StoreClosedError, as
the other reads do (it answered the table as it was at close)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.errors import StoreClosedError, StoreConfigError
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

SMALL = StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=200, max_hash_slot_num=16,
                    max_index_num=64)


@pytest.mark.parametrize("size", [0, -1, -4194304])
def test_a_max_message_size_below_one_byte_is_refused_naming_it(tmp_path: Path, size: int) -> None:
    with pytest.raises(StoreConfigError, match="maxMessageSize"):
        SMALL.replace(max_message_size=size)
    with pytest.raises(StoreConfigError, match="maxMessageSize"):
        StoreConfig.from_properties({"maxMessageSize": str(size)})
    assert not (tmp_path / "store").exists()


def test_topics_of_a_closed_store_is_a_store_closed_error_as_other_reads(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SMALL)
    assert store.put(Message.create("T", b"x")).ok
    assert store.wait_dispatched()
    assert store.topics() == {"T": [0]}
    store.close()
    for read in (store.topics, lambda: store.max_offset("T", 0), lambda: store.min_offset("T", 0)):
        with pytest.raises(StoreClosedError):
            read()
