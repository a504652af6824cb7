"""getMessage statuses and offsets (store-behaviour.md §3), transactional and delayed placement, offsets by time,
segment roll-over, dense queue offsets under concurrency, and broker.conf names."""

from __future__ import annotations

import itertools
import os
import random
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.message.hashing import java_string_hash
from rocketstore.message.record import BLANK_MAGIC, Message, SysFlag, decode_record
from rocketstore.store.config import BrokerRole, FlushDiskType, StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, GetResult, PutMessageStatus

SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8, max_hash_slot_num=4,
                    max_index_num=8)
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
CQ_ENTRY = struct.Struct(">qiq")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", SMALL) as s:
        yield s


def fill(store: MessageStore, count: int, topic: str = "T", queue_id: int = 0, tags: list[str | None] | None = None,
         body_bytes: int = 10) -> None:
    for i in range(count):
        tag = tags[i % len(tags)] if tags else None
        assert store.put(Message.create(topic, bytes([i % 256]) * body_bytes, tags=tag, queue_id=queue_id)).ok
    assert store.wait_dispatched()


def status_line(result: GetResult) -> tuple[GetMessageStatus, int, int, int]:
    return result.status, result.next_begin_offset, result.min_offset, result.max_offset


# --- statuses --------------------------------------------------------------------------------------------


def test_unknown_queue_has_no_message_in_queue(store: MessageStore) -> None:
    assert status_line(store.get("Nobody", 0, 0)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
    assert status_line(store.get("Nobody", 3, 17)) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)


def test_other_queue_of_a_known_topic_has_no_message_in_queue(store: MessageStore) -> None:
    fill(store, 2, queue_id=1)
    assert store.get("T", 0, 0).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE


def test_offset_at_max_is_overflow_one_and_stays_put(store: MessageStore) -> None:
    fill(store, 5)
    assert status_line(store.get("T", 0, 5)) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 5, 0, 5)


def test_offset_past_max_is_overflow_badly_and_moves_to_min_zero(store: MessageStore) -> None:
    fill(store, 5)
    assert status_line(store.get("T", 0, 6)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 5)
    assert status_line(store.get("T", 0, 10**9)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0, 0, 5)


def test_negative_offset_is_offset_too_small(store: MessageStore) -> None:
    fill(store, 3)
    assert status_line(store.get("T", 0, -1)) == (GetMessageStatus.OFFSET_TOO_SMALL, 0, 0, 3)


@pytest.fixture
def store_with_min_offset_8(tmp_path: Path) -> Iterator[MessageStore]:
    """20 entries in queue T/0 whose first consume-queue segment (entries 0..7) is gone.

    Cleanup deletes leading consume-queue segments once their records leave the commitlog; commitlog
    cleanup is not available here, so the segment is deleted while the store is closed, which leaves the
    queue in the same state: min offset 8, max offset 20.
    """
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL) as s:
        fill(s, 20)
    os.remove(path / "consumequeue" / "T" / "0" / ("0" * 20))
    with MessageStore.open(path, SMALL) as s:
        yield s


def test_offset_below_min_is_offset_too_small_and_moves_to_min(store_with_min_offset_8: MessageStore) -> None:
    store = store_with_min_offset_8
    assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (8, 20)
    assert status_line(store.get("T", 0, 0)) == (GetMessageStatus.OFFSET_TOO_SMALL, 8, 8, 20)
    assert status_line(store.get("T", 0, 7)) == (GetMessageStatus.OFFSET_TOO_SMALL, 8, 8, 20)
    assert store.get("T", 0, 8).queue_offsets == tuple(range(8, 16))


def test_overflow_badly_moves_to_max_when_min_is_not_zero(store_with_min_offset_8: MessageStore) -> None:
    assert status_line(store_with_min_offset_8.get("T", 0, 21)) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 20, 8, 20)


def test_queue_with_a_missing_head_segment_continues_densely(store_with_min_offset_8: MessageStore) -> None:
    store = store_with_min_offset_8
    assert store.put(Message("T", b"next")).queue_offset == 20
    store.wait_dispatched()
    assert store.get("T", 0, 16).queue_offsets == (16, 17, 18, 19, 20)


def test_missing_consume_queue_segment_is_offset_found_null_and_moves_to_the_next_segment(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with MessageStore.open(path, SMALL) as s:
        fill(s, 20)
    os.remove(path / "consumequeue" / "T" / "0" / f"{160:020d}")  # entries 8..15
    with MessageStore.open(path, SMALL) as store:
        assert status_line(store.get("T", 0, 10)) == (GetMessageStatus.OFFSET_FOUND_NULL, 16, 0, 20)
        assert store.get("T", 0, 16).queue_offsets == (16, 17, 18, 19)


def test_reads_on_a_closed_store_raise_store_closed_error(tmp_path: Path) -> None:
    from rocketstore.errors import StoreClosedError

    store = MessageStore.open(tmp_path, SMALL)
    msg_id = store.put(Message("T", b"x")).msg_id
    store.close()
    for read in (lambda: store.get("T", 0, 0), lambda: store.message_by_id(msg_id), lambda: store.message_at(0),
                 lambda: store.query("T", "k"), lambda: store.offset_by_time("T", 0, 0)):
        with pytest.raises(StoreClosedError):
            read()


def test_found_returns_at_most_max_count_and_the_offset_after_them(store: MessageStore) -> None:
    fill(store, 6)
    got = store.get("T", 0, 1, max_count=3)
    assert status_line(got) == (GetMessageStatus.FOUND, 4, 0, 6)
    assert got.queue_offsets == (1, 2, 3)
    assert [m.body[:1] for m in got.messages] == [b"\x01", b"\x02", b"\x03"]
    assert [m.queue_offset for m in got.messages] == [1, 2, 3]


def test_max_count_zero_still_returns_the_first_message(store: MessageStore) -> None:
    fill(store, 3)
    got = store.get("T", 0, 0, max_count=0)
    assert (got.status, got.queue_offsets, got.next_begin_offset) == (GetMessageStatus.FOUND, (0,), 1)


def test_get_never_crosses_a_consume_queue_segment(store: MessageStore) -> None:
    fill(store, 20)  # 8 entries per consume-queue segment
    first = store.get("T", 0, 0, max_count=32)
    assert (first.queue_offsets, first.next_begin_offset) == (tuple(range(8)), 8)
    middle = store.get("T", 0, 5, max_count=32)
    assert (middle.queue_offsets, middle.next_begin_offset) == ((5, 6, 7), 8)
    last = store.get("T", 0, 16, max_count=32)
    assert (last.queue_offsets, last.next_begin_offset) == ((16, 17, 18, 19), 20)


def test_records_are_returned_whole_and_in_queue_order(store: MessageStore) -> None:
    fill(store, 8, body_bytes=100)
    got = store.get("T", 0, 0)
    assert [decode_record(r, check_crc=True).queue_offset for r in got.records] == list(range(8))
    assert got.buffer_total_bytes == sum(len(r) for r in got.records) == 8 * (91 + 100 + 1)


# --- tag filters -----------------------------------------------------------------------------------------


def test_tag_filter_with_no_match_is_no_matched_message_and_skips_the_scanned_entries(store: MessageStore) -> None:
    fill(store, 6, tags=["B"])
    assert status_line(store.get("T", 0, 0, tags="A")) == (GetMessageStatus.NO_MATCHED_MESSAGE, 6, 0, 6)
    assert status_line(store.get("T", 0, 2, tags="A")) == (GetMessageStatus.NO_MATCHED_MESSAGE, 6, 0, 6)


def test_tag_filter_scans_to_the_end_of_the_consume_queue_segment(store: MessageStore) -> None:
    fill(store, 12, tags=["B"])
    assert store.get("T", 0, 3, tags="A").next_begin_offset == 8


def test_tag_filter_returns_only_matching_messages(store: MessageStore) -> None:
    fill(store, 8, tags=["A", "B", None, "C"])
    assert store.get("T", 0, 0, tags="A").queue_offsets == (0, 4)
    assert store.get("T", 0, 0, tags="A || C").queue_offsets == (0, 3, 4, 7)
    assert store.get("T", 0, 0, tags=" B ||  ").queue_offsets == (1, 5)
    assert store.get("T", 0, 0, tags="*").queue_offsets == tuple(range(8))
    assert store.get("T", 0, 0, tags=None).queue_offsets == tuple(range(8))


def test_untagged_messages_do_not_match_a_tag_list(store: MessageStore) -> None:
    fill(store, 3, tags=[None])
    assert store.get("T", 0, 0, tags="A").status is GetMessageStatus.NO_MATCHED_MESSAGE


def test_tag_filter_accepts_precomputed_hash_codes(store: MessageStore) -> None:
    fill(store, 4, tags=["TagA", "TagB"])
    got = store.get("T", 0, 0, tags=frozenset({2598920}))  # "TagB".hashCode()
    assert got.queue_offsets == (1, 3)


def test_tag_filter_scan_examines_at_most_16000_bytes_of_entries(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(mapped_file_size_commit_log=1 << 20,
                                                   mapped_file_size_consume_queue=20 * 2000)) as store:
        fill(store, 1000, tags=["B"], body_bytes=1)
        assert status_line(store.get("T", 0, 0, tags="A")) == (GetMessageStatus.NO_MATCHED_MESSAGE, 800, 0, 1000)
        assert store.get("T", 0, 0, max_count=50, tags="A").next_begin_offset == 800  # 50 * 20 < 16000
        assert store.get("T", 0, 0, max_count=1000, tags="A").next_begin_offset == 1000  # 1000 * 20 > 16000


def test_tag_filtered_batch_stops_at_the_entry_after_the_batch_is_full(store: MessageStore) -> None:
    fill(store, 4, tags=["A", "B", "B", "A"])
    got = store.get("T", 0, 0, max_count=1, tags="A")
    assert got.queue_offsets == (0,)
    assert got.next_begin_offset == 1


# --- transfer limits ---------------------------------------------------------------------------------------


def test_in_memory_transfer_stops_at_32_messages(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(mapped_file_size_commit_log=1 << 16,
                                                   mapped_file_size_consume_queue=20 * 100)) as store:
        fill(store, 40)
        got = store.get("T", 0, 0, max_count=64)
        assert (got.status, got.message_count, got.next_begin_offset) == (GetMessageStatus.FOUND, 32, 32)
        assert not got.suggest_pulling_from_slave


def test_in_memory_transfer_stops_before_256_kib(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(mapped_file_size_commit_log=1 << 20)) as store:
        fill(store, 4, body_bytes=100 * 1024)
        got = store.get("T", 0, 0)
        assert (got.message_count, got.next_begin_offset) == (2, 2)
        assert got.buffer_total_bytes <= 262144


def test_first_message_is_returned_whatever_its_size(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(mapped_file_size_commit_log=1 << 20)) as store:
        fill(store, 2, body_bytes=300 * 1024)
        got = store.get("T", 0, 0)
        assert (got.status, got.message_count, got.next_begin_offset) == (GetMessageStatus.FOUND, 1, 1)


def test_on_disk_transfer_stops_at_8_messages_or_64_kib(tmp_path: Path) -> None:
    # ratio 0: no record counts as "in memory", so the on-disk limits apply
    config = SMALL.replace(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 100,
                           access_message_in_memory_max_ratio=0)
    with MessageStore.open(tmp_path, config) as store:
        fill(store, 20, topic="Small")
        fill(store, 5, topic="Big", body_bytes=30 * 1024)
        small = store.get("Small", 0, 0)
        assert (small.message_count, small.next_begin_offset) == (8, 8)
        assert small.suggest_pulling_from_slave
        big = store.get("Big", 0, 0)
        assert (big.message_count, big.next_begin_offset) == (2, 2)
        assert big.buffer_total_bytes <= 65536


# --- transactions ------------------------------------------------------------------------------------------


def test_prepared_and_rollback_records_get_no_queue_entry(store: MessageStore) -> None:
    kinds = [0, SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE,
             SysFlag.TRANSACTION_ROLLBACK_TYPE, 0]
    results = [store.put(Message.create("T", f"m{i}".encode(), keys="k", sys_flag=tx)) for i, tx in enumerate(kinds)]
    assert all(r.ok for r in results)
    assert [r.queue_offset for r in results] == [0, 0, 1, 0, 2]
    store.wait_dispatched()
    got = store.get("T", 0, 0)
    assert got.queue_offsets == (0, 1, 2)
    assert [m.body for m in got.messages] == [b"m0", b"m2", b"m4"]
    assert [m.queue_offset for m in got.messages] == [0, 1, 2]
    prepared = store.message_at(results[1].commit_log_offset)
    assert prepared is not None
    assert (prepared.queue_offset, prepared.sys_flag & SysFlag.TRANSACTION_MASK) == (
        0, SysFlag.TRANSACTION_PREPARED_TYPE)


def test_prepared_records_are_indexed_and_rollback_records_are_not(store: MessageStore) -> None:
    store.put(Message.create("T", b"prepared", keys="order", sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE))
    store.put(Message.create("T", b"rollback", keys="order", sys_flag=SysFlag.TRANSACTION_ROLLBACK_TYPE))
    store.put(Message.create("T", b"normal", keys="order"))
    store.wait_dispatched()
    assert sorted(m.body for m in store.query("T", "order").messages) == [b"normal", b"prepared"]


# --- queries and ids ---------------------------------------------------------------------------------------


@pytest.fixture
def keyed_store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path, SMALL.replace(mapped_file_size_commit_log=1 << 16)) as store:
        for i in range(70):
            assert store.put(Message.create("T", b"%d" % i, keys=["k", f"only{i}"],
                                            store_timestamp=1_700_000_000_000 + i * 1000)).ok
        store.put(Message.create("Other", b"other", keys="k"))
        store.wait_dispatched()
        yield store


def test_query_returns_at_most_64_hits_the_newest_in_commitlog_order(keyed_store: MessageStore) -> None:
    hits = keyed_store.query("T", "k", 100).messages
    assert [m.body for m in hits] == [b"%d" % i for i in range(6, 70)]


def test_query_honours_a_smaller_max_count(keyed_store: MessageStore) -> None:
    assert [m.body for m in keyed_store.query("T", "k", 3).messages] == [b"67", b"68", b"69"]


def test_query_keeps_to_the_time_window(keyed_store: MessageStore) -> None:
    hits = keyed_store.query("T", "k", 64, 1_700_000_010_000, 1_700_000_019_999).messages
    assert [m.body for m in hits] == [b"%d" % i for i in range(10, 20)]


def test_query_is_per_topic(keyed_store: MessageStore) -> None:
    assert [m.body for m in keyed_store.query("Other", "k").messages] == [b"other"]
    assert [m.body for m in keyed_store.query("T", "only33").messages] == [b"33"]
    assert keyed_store.query("T", "absent").messages == ()


def test_records_with_ipv6_hosts_are_dispatched_and_found_by_their_56_character_id(store: MessageStore) -> None:
    from rocketstore.message.host import parse_host

    born, host = parse_host("[::2]:1"), parse_host("[2001:db8::1]:10911")
    result = store.put(Message.create("T", b"v6", keys="six", born_host=born, store_host=host))
    assert result.ok
    assert len(result.msg_id) == 56
    m = store.message_by_id(result.msg_id)
    assert m is not None
    assert (m.body, m.born_host, m.store_host) == (b"v6", born, host)
    assert m.sys_flag & (SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6) == SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6
    store.wait_dispatched()
    assert [x.body for x in store.get("T", 0, 0).messages] == [b"v6"]
    assert [x.body for x in store.query("T", "six").messages] == [b"v6"]


def test_store_host_defaults_to_the_configured_address(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(store_host="10.0.0.1:10911")) as store:
        result = store.put(Message("T", b"x"))
        assert result.msg_id == f"0A00000100002A9F{result.commit_log_offset:016X}"


# --- delayed messages --------------------------------------------------------------------------------------


def read_cq_entry(root: Path, topic: str, queue_id: int, queue_offset: int) -> tuple[int, int, int]:
    data = (root / "consumequeue" / topic / str(queue_id) / ("0" * 20)).read_bytes()
    return CQ_ENTRY.unpack_from(data, queue_offset * 20)


@pytest.mark.parametrize(("level", "queue_id", "delay_ms"), [("1", 0, 1000), ("3", 2, 10_000), ("18", 17, 7_200_000),
                                                             ("99", 17, 7_200_000)])
def test_delayed_message_goes_to_the_schedule_topic_with_delivery_time_as_tags_code(
        tmp_path: Path, level: str, queue_id: int, delay_ms: int) -> None:
    store_ts = 1_700_000_000_000
    with MessageStore.open(tmp_path, SMALL) as store:
        result = store.put(Message.create("Real", b"later", tags="TagA", keys="dk", properties={"DELAY": level},
                                          queue_id=5, store_timestamp=store_ts))
        assert result.ok
        assert (result.topic, result.queue_id, result.queue_offset) == (SCHEDULE_TOPIC, queue_id, 0)
        store.wait_dispatched()
        assert store.max_offset("Real", 5) == 0
        got = store.get(SCHEDULE_TOPIC, queue_id, 0)
        assert got.status is GetMessageStatus.FOUND
        (m,) = got.messages
        assert (m.topic, m.queue_id, m.store_timestamp, m.body) == (SCHEDULE_TOPIC, queue_id, store_ts, b"later")
        assert m.properties["REAL_TOPIC"] == "Real"
        assert m.properties["REAL_QID"] == "5"
        assert m.properties["DELAY"] == str(queue_id + 1)  # a level past the highest is stored as the highest
        assert m.tags == "TagA"
        store.flush()
        phy, size, tags_code = read_cq_entry(tmp_path, SCHEDULE_TOPIC, queue_id, 0)
        assert (phy, size, tags_code) == (result.commit_log_offset, result.wrote_bytes, store_ts + delay_ms)
        assert [m.body for m in store.query(SCHEDULE_TOPIC, "dk").messages] == [b"later"]


def test_delay_level_zero_stores_the_message_in_its_own_topic(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        result = store.put(Message.create("Real", b"now", tags="TagA", properties={"DELAY": "0"}))
        assert (result.topic, result.queue_offset) == ("Real", 0)
        store.flush()
        assert read_cq_entry(tmp_path, "Real", 0, 0)[2] == java_string_hash("TagA")


def test_prepared_delayed_message_is_not_rescheduled(store: MessageStore) -> None:
    result = store.put(Message.create("Real", b"x", properties={"DELAY": "2"},
                                      sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE))
    assert (result.status, result.topic) == (PutMessageStatus.PUT_OK, "Real")
    store.wait_dispatched()
    assert store.topics() == {}


def test_tags_code_in_the_consume_queue_is_the_sign_extended_tags_hash(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        store.put(Message.create("T", b"", tags="ORDER_CREATED"))
        store.put(Message.create("T", b""))
        store.flush()
        assert read_cq_entry(tmp_path, "T", 0, 0)[2] == java_string_hash("ORDER_CREATED") < 0
        assert read_cq_entry(tmp_path, "T", 0, 1)[2] == 0


# --- offsets by time ---------------------------------------------------------------------------------------


@pytest.fixture
def timed_store(store: MessageStore) -> MessageStore:
    for i, ts in enumerate([1000, 2000, 3000, 4000]):
        assert store.put(Message("T", bytes([i]), store_timestamp=ts)).ok
    store.wait_dispatched()
    return store


@pytest.mark.parametrize(("timestamp", "expected"), [
    (2000, 1),  # exact
    (2400, 1),  # nearer the earlier entry
    (2500, 1),  # tie: the earlier entry
    (2501, 2),  # nearer the later entry
    (500, 0),  # before every entry: the first
    (1000, 0),
    (4000, 3),
    (9999, 3),  # after every entry: the last
])
def test_offset_by_time_picks_the_nearest_entry_with_ties_to_the_earlier(timed_store: MessageStore, timestamp: int,
                                                                         expected: int) -> None:
    assert timed_store.offset_by_time("T", 0, timestamp) == expected


def test_offset_by_time_of_an_unknown_queue_is_zero(store: MessageStore) -> None:
    assert store.offset_by_time("Nobody", 0, 12345) == 0


def test_store_time_lookups(timed_store: MessageStore) -> None:
    assert [timed_store.store_time("T", 0, i) for i in range(4)] == [1000, 2000, 3000, 4000]
    assert timed_store.store_time("T", 0, 4) == -1
    assert timed_store.earliest_message_time("T", 0) == 1000
    assert timed_store.earliest_message_time() == 1000


# --- segment roll-over ---------------------------------------------------------------------------------------


def test_record_that_does_not_fit_leaves_a_blank_record_and_rolls_to_the_next_segment(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        body = b"x" * (1000 - 92)
        offsets = [store.put(Message("T", body)).commit_log_offset for _ in range(5)]
        assert offsets == [0, 1000, 2000, 3000, 4096]
        store.flush()
        first = (tmp_path / "commitlog" / ("0" * 20)).read_bytes()
        assert len(first) == 4096
        assert struct.unpack_from(">ii", first, 4000) == (96, BLANK_MAGIC)
        assert first[4008:] == bytes(88)
        assert store.message_at(4000) is None
        store.wait_dispatched()
        assert store.get("T", 0, 0).queue_offsets == (0, 1, 2, 3, 4)
        assert store.message_at(4096).queue_offset == 4  # type: ignore[union-attr]


def test_records_never_end_closer_than_8_bytes_to_a_segment_end(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    with MessageStore.open(tmp_path, SMALL) as store:
        placed = []
        for i in range(200):
            result = store.put(Message("T", b"y" * rng.randint(0, 1500), queue_id=i % 3))
            assert result.ok
            placed.append((result.commit_log_offset, result.wrote_bytes))
        for (offset, size), (next_offset, _) in itertools.pairwise(placed):
            end_in_segment = offset % 4096 + size
            assert end_in_segment <= 4096 - 8
            if next_offset != offset + size:  # rolled: the rest of the segment is a blank record
                assert next_offset == offset - offset % 4096 + 4096
                assert store.message_at(offset + size) is None
        store.wait_dispatched()
        for q in range(3):
            expected = [p for i, p in enumerate(placed) if i % 3 == q]
            got: list[int] = []
            offset = 0
            while offset < store.max_offset("T", q):
                result = store.get("T", q, offset)
                got.extend(decode_record(r).commit_log_offset for r in result.records)
                offset = result.next_begin_offset
            assert got == [o for o, _ in expected]


# --- concurrency ---------------------------------------------------------------------------------------------


def test_concurrent_puts_and_batches_to_one_queue_get_dense_unique_queue_offsets(tmp_path: Path) -> None:
    config = SMALL.replace(mapped_file_size_commit_log=1 << 16, mapped_file_size_consume_queue=20 * 1000)
    threads_count, per_thread = 8, 50
    with MessageStore.open(tmp_path, config) as store:
        offsets: list[int] = []
        lock = threading.Lock()
        start = threading.Barrier(threads_count)

        def worker(n: int) -> None:
            start.wait()
            mine: list[int] = []
            i = 0
            while i < per_thread:
                if n % 2 and i + 5 <= per_thread:  # odd threads interleave batches of five
                    result = store.put_batch([Message("T", f"{n}-{i + j}".encode()) for j in range(5)])
                    assert result.ok
                    mine.extend(range(result.queue_offset, result.queue_offset + 5))
                    i += 5
                else:
                    mine.append(store.put(Message("T", f"{n}-{i}".encode())).queue_offset)
                    i += 1
            with lock:
                offsets.extend(mine)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(threads_count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = threads_count * per_thread
        assert sorted(offsets) == list(range(total))
        store.wait_dispatched()
        seen = []
        offset = 0
        while offset < total:
            got = store.get("T", 0, offset)
            seen.extend(got.messages)
            offset = got.next_begin_offset
        assert [m.queue_offset for m in seen] == list(range(total))
        phys = [m.commit_log_offset for m in seen]
        assert phys == sorted(phys)
        assert len({m.body for m in seen}) == total


# --- configuration -------------------------------------------------------------------------------------------


def test_config_defaults_match_rocketmq() -> None:
    c = StoreConfig()
    assert (c.mapped_file_size_commit_log, c.mapped_file_size_consume_queue) == (1073741824, 6000000)
    assert (c.max_hash_slot_num, c.max_index_num, c.max_msgs_num_batch, c.default_query_max_num) == (
        5000000, 20000000, 64, 32)
    assert (c.max_message_size, c.flush_disk_type, c.broker_role) == (4194304, "ASYNC_FLUSH", "ASYNC_MASTER")
    assert (c.max_transfer_bytes_on_message_in_memory, c.max_transfer_count_on_message_in_memory) == (262144, 32)
    assert (c.max_transfer_bytes_on_message_in_disk, c.max_transfer_count_on_message_in_disk) == (65536, 8)
    assert (c.access_message_in_memory_max_ratio, c.check_crc_on_recover, c.message_index_safe) == (40, True, False)
    assert c.delay_levels_ms()[1] == 1000 and c.delay_levels_ms()[18] == 7_200_000
    assert c.index_file_bytes == 420_000_040


def test_config_from_properties_reads_broker_conf_names() -> None:
    props = {
        "storePathRootDir": "/data/store",
        "storePathCommitLog": "/data/store/commitlog",
        "mappedFileSizeCommitLog": "8192",
        "mappedFileSizeConsumeQueue": "30",
        "maxHashSlotNum": "100",
        "maxIndexNum": "400",
        "maxMessageSize": "65536",
        "flushDiskType": "SYNC_FLUSH",
        "brokerRole": "SLAVE",
        "flushIntervalCommitLog": "1000",
        "syncFlushTimeout": "3000",
        "messageIndexEnable": "FALSE",
        "fileReservedTime": "48",
        "deleteWhen": "01;02",
        "messageDelayLevel": "1s 2m 3h 1d",
        "osPageCacheBusyTimeOutMills": "2000",
        "warmMapedFileEnable": "true",
        "maxTransferCountOnMessageInMemory": "16",
        "brokerIP1": "10.0.0.1",
        "listenPort": "10915",
        "namesrvAddr": "127.0.0.1:9876",  # belongs to the broker, ignored
        "brokerClusterName": "DefaultCluster",
    }
    c = StoreConfig.from_properties(props)
    assert (c.store_path_root_dir, c.commit_log_dir) == ("/data/store", "/data/store/commitlog")
    assert (c.mapped_file_size_commit_log, c.mapped_file_size_consume_queue, c.consume_queue_file_bytes) == (
        8192, 30, 40)
    assert (c.max_hash_slot_num, c.max_index_num, c.max_message_size) == (100, 400, 65536)
    assert (c.flush_disk_type, c.broker_role) == (FlushDiskType.SYNC_FLUSH, BrokerRole.SLAVE)
    assert (c.flush_interval_commit_log_ms, c.sync_flush_timeout_ms) == (1000, 3000)
    assert (c.message_index_enable, c.file_reserved_time_h, c.delete_when) == (False, 48, "01;02")
    assert c.delay_levels_ms() == {1: 1000, 2: 120_000, 3: 10_800_000, 4: 86_400_000}
    assert (c.os_page_cache_busy_timeout_ms, c.warm_mapped_file_enable) == (2000, True)
    assert c.max_transfer_count_on_message_in_memory == 16
    assert c.store_host == "10.0.0.1:10915"


def test_config_from_properties_brackets_an_ipv6_broker_ip() -> None:
    assert StoreConfig.from_properties({"brokerIP1": "2001:db8::1"}).store_host == "[2001:db8::1]:10911"


def test_config_from_properties_reads_check_crc_on_recover() -> None:
    assert StoreConfig.from_properties({"checkCRCOnRecover": "false"}).check_crc_on_recover is False


@pytest.mark.parametrize("props", [{"mappedFileSizeCommitLog": "big"}, {"flushDiskType": "SOMETIMES"},
                                   {"brokerRole": "LEADER"}, {"messageDelayLevel": "1x"},
                                   {"mappedFileSizeCommitLog": "100"}])
def test_config_from_properties_rejects_unusable_values(props: dict[str, str]) -> None:
    from rocketstore.errors import StoreConfigError

    with pytest.raises(StoreConfigError):
        StoreConfig.from_properties(props)


def test_config_is_frozen_and_picklable() -> None:
    import dataclasses
    import pickle

    c = SMALL.replace(store_path_root_dir="/x")
    assert pickle.loads(pickle.dumps(c)) == c
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.max_message_size = 1  # type: ignore[misc]
