"""messageDelayLevel read as 4.9.3's parseDelayLevel reads it (Long.parseLong of each number), refused with
StoreConfigError (never a bare ValueError) when it cannot be; and the schedule-topic tagsCode of every record
dispatched without an error: DELAY read as Integer.parseInt reads it, the delivery time added as Java longs
add (a huge configured delay wrapped round instead of stopping dispatch with struct.error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.message.hashing import tags_code
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig, parse_delay_levels
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore

SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=100, max_hash_slot_num=16,
                    max_index_num=64)


@pytest.mark.parametrize("levels", [
    "1s \u00b2s",  # a superscript two: str.isdigit says yes, int() and Long.parseLong say no
    "1s 9223372036854775808s",  # past Long.parseLong
    "1s 99999999999999d",  # a long, but its milliseconds are not (4.9.3 wraps round to a nonsense delay)
    "1s 2x", "1s s", "",
])
def test_a_delay_level_string_that_does_not_parse_is_a_store_config_error(levels: str) -> None:
    with pytest.raises(StoreConfigError):
        StoreConfig(message_delay_level=levels)


@pytest.mark.parametrize(("levels", "expected"), [
    ("1s +2s", {1: 1000, 2: 2000}),  # Long.parseLong takes a sign
    ("1s -2s", {1: 1000, 2: -2000}),
    ("1s \u0662m", {1: 1000, 2: 120_000}),  # and any Unicode decimal digit
    ("1s 2m 1h 1d", {1: 1000, 2: 120_000, 3: 3_600_000, 4: 86_400_000}),
])
def test_delay_levels_are_read_as_long_parse_long_reads_them(levels: str, expected: dict[int, int]) -> None:
    assert parse_delay_levels(levels) == expected
    StoreConfig(message_delay_level=levels)


def test_a_delay_past_what_a_long_time_holds_is_dispatched_wrapped_round(tmp_path: Path) -> None:
    config = SMALL.replace(message_delay_level="1s 106751991167d")  # just under 2**63 ms
    with MessageStore.open(tmp_path / "store", config) as store:
        result = store.put(Message("T", b"x", {"DELAY": "2"}, 0))
        assert result.ok
        assert store.wait_dispatched(10)
        [(_, _, code)] = store.queue_entries(SCHEDULE_TOPIC, 1, 0, 1) or []
        stored = store.message_at(result.commit_log_offset)
        assert stored is not None
        assert code == stored.store_timestamp + 106751991167 * 86_400_000 - 2**64
        assert store.put(Message("T", b"after", {}, 0)).ok
        assert store.wait_dispatched(10) and store.max_offset("T", 0) == 1


@pytest.mark.parametrize(("delay", "delayed"), [(" 2", False), ("2_0", False), ("\u0662", True), ("+2", True)])
def test_another_writers_delay_is_read_as_integer_parse_int_reads_it(tmp_path: Path, delay: str,
                                                                     delayed: bool) -> None:
    with MessageStore.open(tmp_path / "store", SMALL.replace(message_delay_level="1s 2s")) as store:
        record = Message(SCHEDULE_TOPIC, b"x", {"DELAY": delay, "TAGS": "t", "REAL_TOPIC": "T", "REAL_QID": "0"}, 1)
        result = store.put(record, apply_delay=False)
        assert result.ok
        assert store.wait_dispatched(10)
        [(_, _, code)] = store.queue_entries(SCHEDULE_TOPIC, 1, 0, 1) or []
        stored = store.message_at(result.commit_log_offset)
        assert stored is not None
        assert code == (stored.store_timestamp + 2000 if delayed else tags_code("t"))
