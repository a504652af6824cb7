"""The embedded store's edges as a library user meets them: arguments of the wrong type are a TypeError naming
the argument (before anything is written), the commitlog read-outs keep their values after close, a bool
queue id, and DELAY read as 4.9.3 reads it (Integer.parseInt) on every store path."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketstore.errors import StoreClosedError, StoreLockedError
from rocketstore.message.batch import MessageBatch
from rocketstore.message.java_numbers import parse_java_int
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, PutMessageStatus
from rocketstore.store.verify import verify_store

SMALL = StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=200, max_hash_slot_num=16,
                    max_index_num=64)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", SMALL) as s:
        assert s.put(Message.create("T", b"x", keys="k1")).ok
        assert s.wait_dispatched()
        yield s


# --- arguments of the wrong type ---------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [None, "T", {"topic": "T"}, b"x"], ids=["None", "str", "dict", "bytes"])
def test_put_of_something_that_is_no_message_is_a_type_error_and_writes_nothing(
        store: MessageStore, message: Any) -> None:
    before = store.max_commit_log_offset
    with pytest.raises(TypeError, match="put takes a Message"):
        store.put(message)
    assert store.max_commit_log_offset == before


@pytest.mark.parametrize(("messages", "words"), [
    (None, "not NoneType"),
    ("abc", "not str"),
    (Message("T", b"x"), "not Message"),
    ([Message("T", b"x"), None], "put_batch takes Messages, not NoneType"),
    ([Message("T", b"x"), ("T", b"y")], "put_batch takes Messages, not tuple"),
], ids=["None", "str", "a lone Message", "None inside", "tuple inside"])
def test_put_batch_of_something_that_is_no_batch_is_a_type_error_and_writes_nothing(
        store: MessageStore, messages: Any, words: str) -> None:
    before = store.max_commit_log_offset
    with pytest.raises(TypeError, match=words):
        store.put_batch(messages)
    assert store.max_commit_log_offset == before
    assert store.put_batch(iter([Message("T", b"a"), Message("T", b"b")])).ok, "any iterable of Messages"


CALLS: list[tuple[str, Callable[[MessageStore], object], str]] = [
    ("get float offset", lambda s: s.get("T", 0, 0.5), "queue_offset"),
    ("get bool offset", lambda s: s.get("T", 0, True), "queue_offset"),
    ("get str offset", lambda s: s.get("T", 0, "0"), "queue_offset"),
    ("get None offset", lambda s: s.get("T", 0, None), "queue_offset"),
    ("get float queue", lambda s: s.get("T", 0.0, 0), "queue_id"),
    ("get bool queue", lambda s: s.get("T", False, 0), "queue_id"),
    ("get str queue", lambda s: s.get("T", "0", 0), "queue_id"),
    ("get None topic", lambda s: s.get(None, 0, 0), "topic"),
    ("get bytes topic", lambda s: s.get(b"T", 0, 0), "topic"),
    ("get float max_count", lambda s: s.get("T", 0, 0, 2.5), "max_count"),
    ("get None max_count", lambda s: s.get("T", 0, 0, None), "max_count"),
    ("get int tags", lambda s: s.get("T", 0, 0, tags=5), "tags"),
    ("message_at float", lambda s: s.message_at(0.0), "commit_log_offset"),
    ("message_at None", lambda s: s.message_at(None), "commit_log_offset"),
    ("message_by_id None", lambda s: s.message_by_id(None), "msg_id"),
    ("query None key", lambda s: s.query("T", None), "key"),
    ("query None topic", lambda s: s.query(None, "k1"), "topic"),
    ("query float max_count", lambda s: s.query("T", "k1", 1.5), "max_count"),
    ("query str begin", lambda s: s.query("T", "k1", 8, "0"), "begin_ms"),
    ("query float end", lambda s: s.query("T", "k1", 8, 0, 1e18), "end_ms"),
    ("offset_by_time float", lambda s: s.offset_by_time("T", 0, 5.5), "timestamp_ms"),
    ("offset_by_time None", lambda s: s.offset_by_time("T", 0, None), "timestamp_ms"),
    ("min_offset None topic", lambda s: s.min_offset(None, 0), "topic"),
    ("max_offset str queue", lambda s: s.max_offset("T", "0"), "queue_id"),
    ("store_time float offset", lambda s: s.store_time("T", 0, 0.5), "queue_offset"),
    ("earliest float queue", lambda s: s.earliest_message_time("T", 0.5), "queue_id"),
    ("queue_entries float index", lambda s: s.queue_entries("T", 0, 0.5, 1), "index"),
    ("read_replica float offset", lambda s: s.read_replica(0.5, 10), "offset"),
]


@pytest.mark.parametrize(("call", "argument"), [(c[1], c[2]) for c in CALLS], ids=[c[0] for c in CALLS])
def test_a_read_with_an_argument_of_the_wrong_type_is_a_type_error_naming_it(
        store: MessageStore, call: Callable[[MessageStore], object], argument: str) -> None:
    # before: slicing TypeErrors from deep inside, a float queue id that found queue 0, a bool offset handed
    # back as the next offset, an AttributeError for a None key
    with pytest.raises(TypeError, match=f"^{argument} must be"):
        call(store)


def test_reads_with_right_arguments_still_answer_as_before(store: MessageStore) -> None:
    import numpy as np

    got = store.get("T", np.int64(0), np.int32(0), np.int64(4))  # numpy integers are ints here
    assert got.status is GetMessageStatus.FOUND and [m.body for m in got.messages] == [b"x"]
    assert store.get("T", 0, -1).status is GetMessageStatus.OFFSET_TOO_SMALL
    assert store.get("T", 0, 0, 0).status is GetMessageStatus.FOUND, "maxMsgNums 0 still hands out one (4.9.3)"
    assert len(store.get("T", 0, 0, 10**12).messages) == 1
    assert store.message_at(-1) is None
    assert [m.body for m in store.query("T", "k1").messages] == [b"x"]
    assert store.query("T", "k1", 0).messages == ()
    assert store.max_offset("T", np.int64(0)) == 1
    assert store.queue_entries("T", 0, 0, 10**12) == [(0, store.max_commit_log_offset, 0)]


# --- after close ------------------------------------------------------------------------------------------------


def test_the_commitlog_read_outs_keep_their_values_after_close(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SMALL)
    for i in range(3):
        assert store.put(Message.create("T", b"m%d" % i)).ok
    store.flush()
    open_values = (store.min_commit_log_offset, store.max_commit_log_offset, store.flushed_commit_log_offset,
                   store.durable_offset)
    assert open_values[1] > 0
    store.close()
    # before: 0, 0, 0, 0 (the files are unmapped), which reads as an empty store
    assert (store.min_commit_log_offset, store.max_commit_log_offset, store.flushed_commit_log_offset,
            store.durable_offset) == open_values
    store.close()  # closing twice is fine
    assert store.max_commit_log_offset == open_values[1]
    assert store.put(Message.create("T", b"late")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_read_outs_racing_close_never_answer_zero(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "store", SMALL)
    assert store.put(Message.create("T", b"x")).ok
    end = store.max_commit_log_offset
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(store.max_commit_log_offset)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        store.close()
        for _ in range(1000):
            seen.append(store.max_commit_log_offset)
    finally:
        stop.set()
        reader.join(10)
    assert set(seen) == {end}


# --- a bool queue id -------------------------------------------------------------------------------------------


def test_message_create_refuses_a_bool_or_str_queue_id_and_takes_a_numpy_one() -> None:
    import numpy as np

    with pytest.raises(TypeError, match="queue_id must be an int, not a bool"):
        Message.create("T", b"x", queue_id=True)
    with pytest.raises(TypeError, match="queue_id must be an int, not str"):
        Message.create("T", b"x", queue_id="1")
    made = Message.create("T", b"x", queue_id=np.int64(3))
    assert made.queue_id == 3 and type(made.queue_id) is int


def test_a_delayed_message_built_with_queue_id_true_keeps_real_qid_1(tmp_path: Path) -> None:
    # session 14 stores a Message(queue_id=True) in queue 1; delayed, its REAL_QID said "True", and the
    # delivery would then have had no queue to go to
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        result = store.put(Message("T", b"x", {"DELAY": "1"}, queue_id=True))
        assert result.ok
        record = store.message_at(result.commit_log_offset)
        assert record is not None and record.topic == SCHEDULE_TOPIC
        assert (record.properties["REAL_TOPIC"], record.properties["REAL_QID"]) == ("T", "1")
        for bad in ("1", 1.0, -1, 2**31):
            before = store.max_commit_log_offset
            refused = store.put(Message("T", b"x", {"DELAY": "1"}, queue_id=bad))  # type: ignore[arg-type]
            assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL, (bad, refused)
            assert store.max_commit_log_offset == before


# --- DELAY as 4.9.3 reads it ----------------------------------------------------------------------------------------

#: texts Integer.parseInt refuses that Python's int() takes (or that neither takes)
NOT_JAVA_INTS = [" 3", "3 ", "3_0", "\t2", "1.5", "abc", "", "+", "99999999999"]
#: texts both read, to the same number (Java's Character.digit takes any Unicode decimal digit)
JAVA_INTS = [("+3", 3), ("\u0663", 3), ("\uff12", 2), ("03", 3), ("-1", -1), ("0", 0)]


def test_the_shared_parser_reads_as_integer_parse_int() -> None:
    for text in NOT_JAVA_INTS:
        with pytest.raises(ValueError):
            parse_java_int(text)
    assert [parse_java_int(text) for text, _ in JAVA_INTS] == [n for _, n in JAVA_INTS]


@pytest.mark.parametrize("delay", NOT_JAVA_INTS)
def test_a_put_whose_delay_is_no_java_int_is_refused_and_writes_nothing(store: MessageStore, delay: str) -> None:
    # before: int() scheduled " 3", "3_0" (as level 30, capped) and stored "abc" / "1.5" at once in its topic;
    # 4.9.3's parseInt throws and nothing is stored
    before = store.max_commit_log_offset
    result = store.put(Message.create("T", b"x", properties={"DELAY": delay}))
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL, result
    assert "NumberFormatException" in result.remark
    assert store.max_commit_log_offset == before
    # a half message's DELAY is not read (4.9.3 reads it only for NOT and COMMIT types)
    assert store.put(Message.create("T", b"x", properties={"DELAY": delay}, sys_flag=4)).ok


@pytest.mark.parametrize(("delay", "level"), [(text, n) for text, n in JAVA_INTS if n > 0])
def test_a_put_whose_delay_java_reads_is_scheduled_at_that_level(store: MessageStore, delay: str,
                                                                  level: int) -> None:
    result = store.put(Message.create("T", b"x", properties={"DELAY": delay}))
    assert result.ok and result.topic == SCHEDULE_TOPIC
    record = store.message_at(result.commit_log_offset)
    assert record is not None and record.queue_id == level - 1


@pytest.mark.parametrize("delay", [" 3", "3_0", "abc"])
def test_put_batch_of_messages_refuses_a_delay_that_is_no_java_int(store: MessageStore, delay: str) -> None:
    before = store.max_commit_log_offset
    result = store.put_batch([Message("T", b"a"), Message.create("T", b"b", properties={"DELAY": delay})])
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL and "NumberFormatException" in result.remark
    assert store.max_commit_log_offset == before
    assert store.put_batch([Message.create("T", b"a", properties={"DELAY": "-1"})]).ok


def test_a_message_batch_reads_only_its_own_delay_as_4_9_3_does(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        # an entry's DELAY is not read: stored as it came, in the batch's topic (4.9.3's putMessages)
        stored = store.put_batch(MessageBatch("T", 0, [0, 0], [b"a", b"b"], [b"DELAY\x012", b"DELAY\x01 x"], "W\x01y"))
        assert stored.ok and stored.topic == "T"
        for delay in ("DELAY\x01 3", "DELAY\x013_0", "DELAY\x01x"):
            before = store.max_commit_log_offset
            refused = store.put_batch(MessageBatch("T", 0, [0], [b"a"], [b""], delay))
            assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL and "NumberFormatException" in refused.remark
            assert store.max_commit_log_offset == before
        assert store.put_batch(MessageBatch("T", 0, [0], [b"a"], [b""], "DELAY\x011")).status \
            is PutMessageStatus.MESSAGE_ILLEGAL, "a batch's own level > 0: MESSAGE_ILLEGAL"
        assert store.wait_dispatched()
        assert [m.properties.get("DELAY") for m in store.get("T", 0, 0).messages] == ["2", " x"]
    with MessageStore.open(tmp_path / "store", SMALL, read_only=True) as store:
        assert verify_store(store).ok


# --- opening, closing, read-only --------------------------------------------------------------------------------


def test_a_read_only_store_takes_no_replica_bytes(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        assert store.put(Message.create("T", b"x")).ok
    with MessageStore.open(tmp_path / "store", SMALL, read_only=True) as ro:
        end = ro.max_commit_log_offset
        # before: the scratch mapping took the bytes and the store's end moved past them
        with pytest.raises(PermissionError, match="read-only"):
            ro.append_replica(end, b"\0" * 16)
        assert ro.max_commit_log_offset == end
        assert ro.put(Message.create("T", b"y")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert ro.put_batch([Message.create("T", b"y")]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_a_closed_store_cannot_be_entered_again(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        assert store.put(Message.create("T", b"x")).ok
    # before: entered, then every read raised StoreClosedError
    with pytest.raises(StoreClosedError), store:
        pass


def test_a_second_open_in_this_process_is_not_blamed_on_another_process(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "store", SMALL), \
            pytest.raises(StoreLockedError, match="in this process or another"):
        MessageStore.open(tmp_path / "store", SMALL)
