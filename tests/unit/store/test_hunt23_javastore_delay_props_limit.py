"""A delayed message whose properties string fits the 32767-character limit as sent, but not once the
store adds REAL_TOPIC and REAL_QID, is refused with PROPERTIES_SIZE_EXCEEDED, as RocketMQ 4.9.3 refuses it.

4.9.3's DefaultMessageStore.checkMessage measures the properties string it was given (MESSAGE_ILLEGAL past
32767 characters); CommitLog.asyncPutMessage then adds REAL_TOPIC and REAL_QID for the schedule topic, and
only its MessageExtEncoder sees the longer string (PROPERTIES_SIZE_EXCEEDED past 32767 bytes).  We used to
measure the rewritten string and answer MESSAGE_ILLEGAL.

The expected statuses were produced by the real 4.9.3 DefaultMessageStore (compiled from the tag's sources,
run on the same messages with the same store geometry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

CONFIG = StoreConfig(mapped_file_size_commit_log=65536, mapped_file_size_consume_queue=6000,
                     max_hash_slot_num=100, max_index_num=400, store_host="127.0.0.1:10911")

# properties TAGS=*, DELAY=<level>, big=<filler>: the string as sent is 19 characters plus the filler's
# length plus the level's; REAL_TOPIC=TopicA and REAL_QID=1 add 29 characters
CASES = [
    # (DELAY, filler, what 4.9.3 answered)
    ("3", "v" * 32748, "PROPERTIES_SIZE_EXCEEDED"),  # 32767 as sent, 32796 rewritten
    ("3", "v" * 32749, "MESSAGE_ILLEGAL"),  # 32768 as sent: checkMessage refuses it
    ("3", "v" * 32719, "PUT_OK"),  # 32767 rewritten: fits
    ("3", "v" * 32720, "PROPERTIES_SIZE_EXCEEDED"),  # 32768 rewritten
    ("30", "v" * 32720, "PROPERTIES_SIZE_EXCEEDED"),  # capped to 18 (same length), 32769 rewritten
    ("3", "\u00e9" * 16000, "PUT_OK"),  # 16019 characters, 32048 bytes rewritten
]


@pytest.mark.parametrize(("delay", "filler", "want"), CASES)
def test_a_delayed_message_is_refused_with_the_status_4_9_3_gives(
        tmp_path: Path, delay: str, filler: str, want: str) -> None:
    with MessageStore.open(tmp_path / "store", CONFIG) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="*", queue_id=1,
                                          properties={"DELAY": delay, "big": filler}))
        assert result.status is PutMessageStatus[want]
        if want != "PUT_OK":
            assert store.max_commit_log_offset == 0  # nothing was written


def test_a_message_without_delay_still_answers_message_illegal_past_the_limit(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", CONFIG) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="*", properties={"big": "v" * 32757}))
        assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
        fits = store.put(Message.create("TopicA", b"hello", tags="*", properties={"big": "v" * 32756}))
        assert fits.status is PutMessageStatus.PUT_OK


EMOJI = "\U0001F642"  # one code point, two UTF-16 units (Java's String.length() counts two), four bytes

# 4.9.3 measures the properties string in UTF-16 units: past 32767 it is MESSAGE_ILLEGAL even when it holds
# fewer than 32767 code points (it is too many bytes either way: PROPERTIES_SIZE_EXCEEDED below that)
UTF16_CASES = [
    # (DELAY or None, filler, what 4.9.3 answered)
    (None, EMOJI * 16378, "PROPERTIES_SIZE_EXCEEDED"),  # 32767 UTF-16 units as sent
    (None, EMOJI * 16379, "MESSAGE_ILLEGAL"),  # 32769 UTF-16 units, 16390 code points
    (None, EMOJI * 8000, "PUT_OK"),
    ("2", EMOJI * 16370, "PROPERTIES_SIZE_EXCEEDED"),  # 32759 units as sent
    ("2", EMOJI * 16375, "MESSAGE_ILLEGAL"),  # 32769 units as sent, 16394 code points
]


@pytest.mark.parametrize(("delay", "filler", "want"), UTF16_CASES)
def test_the_properties_limit_counts_utf16_units_as_4_9_3_does(
        tmp_path: Path, delay: str | None, filler: str, want: str) -> None:
    properties = {"big": filler} if delay is None else {"DELAY": delay, "big": filler}
    with MessageStore.open(tmp_path / "store", CONFIG) as store:
        result = store.put(Message.create("TopicA", b"hello", tags="*", queue_id=1, properties=properties))
        assert result.status is PutMessageStatus[want]
