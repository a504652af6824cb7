"""The embedded store's get() meets a record damaged on disk after it was stored: a clean open re-checks
only the commitlog's last segments, so a byte flipped in an earlier one reaches the readers.
``GetResult.messages`` no longer hands out a body that fails its CRC as intact, and a record that does not
decode is named by its queue offset (it said "at offset 0", its position in its own bytes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.errors import MessageDecodeError

#: small segments: the damaged record's segment is far from the tail the clean open re-checks
CONFIG = StoreConfig(mapped_file_size_commit_log=4096)
COUNT = 200
DAMAGED = 2
FLIPS = {"body": (88 + 3, 0x01), "magic": (5, 0x40), "size": (1, 0x40)}
WORDS = {"body": "body CRC mismatch", "magic": "bad magic code", "size": "declared size"}


def _damaged_store(path: Path, kind: str) -> None:
    with MessageStore.open(str(path), CONFIG) as store:
        results = [store.put(Message.create("T", b"message %d" % i, queue_id=0)) for i in range(COUNT)]
        assert store.wait_dispatched()
    at, mask = FLIPS[kind]
    position = results[DAMAGED].commit_log_offset + at
    with open(os.path.join(path, "commitlog", f"{0:020d}"), "r+b") as segment:
        segment.seek(position)
        byte = segment.read(1)[0]
        segment.seek(position)
        segment.write(bytes([byte ^ mask]))


@pytest.mark.parametrize("kind", sorted(FLIPS))
def test_get_messages_names_a_record_damaged_after_a_clean_close(tmp_path: Path, kind: str) -> None:
    _damaged_store(tmp_path, kind)
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        assert store.max_offset("T", 0) == COUNT  # the clean open kept every record
        got = store.get("T", 0, 0, max_count=5)
        assert got.queue_offsets == (0, 1, 2, 3, 4)  # the raw records are all there, as stored
        with pytest.raises(MessageDecodeError) as caught:
            got.messages  # noqa: B018 - the property decodes
        assert f"queue offset {DAMAGED})" in str(caught.value) and WORDS[kind] in str(caught.value)
        assert [m.body for m in store.get("T", 0, DAMAGED + 1, max_count=2).messages] == [b"message 3",
                                                                                          b"message 4"]


def test_store_dump_lists_a_body_that_fails_its_crc_as_damaged(tmp_path: Path) -> None:
    """It was dumped as an intact message (its changed body and all); now it is listed with the error, as a
    record that does not decode is, and the rest of the queue is dumped."""
    from rocketstore.store.dump import dump_store

    _damaged_store(tmp_path, "body")
    with MessageStore.open(str(tmp_path), CONFIG, read_only=True) as store:
        dumped = dump_store(store)
    [queue] = [q for t in dumped["topics"] if t["topic"] == "T" for q in t["queues"]]
    listed = {m["queueOffset"]: m for m in queue["messages"]}
    assert listed[DAMAGED]["error"] == "body CRC mismatch"
    assert listed[DAMAGED]["commitLogOffset"] == DAMAGED * listed[DAMAGED]["storeSize"]
    assert len(listed) == COUNT and all("error" not in m for q, m in listed.items() if q != DAMAGED)


def test_a_property_filter_hands_over_a_record_that_does_not_hold_together(tmp_path: Path) -> None:
    """A SQL92 (property) filter cannot read the properties of a record whose body length rotted: the record
    is handed over (the client names it as damaged and skips it) rather than vanish as 'not matched'."""
    with MessageStore.open(str(tmp_path), CONFIG) as store:  # (the damaged segment far from the tail)
        results = [store.put(Message.create("T", b"message %d" % i, queue_id=0)) for i in range(COUNT)]
        assert store.wait_dispatched()
    with open(os.path.join(tmp_path, "commitlog", f"{0:020d}"), "r+b") as segment:
        segment.seek(results[DAMAGED].commit_log_offset + 84)  # BODYLENGTH's high byte (IPv4 hosts)
        segment.write(b"\x40")
    with MessageStore.open(str(tmp_path), CONFIG) as store:
        got = store.get("T", 0, 0, max_count=5, match=lambda props: True)
        assert got.queue_offsets == (0, 1, 2, 3, 4)
