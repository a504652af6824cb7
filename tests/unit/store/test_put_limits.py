"""Put checks (store-behaviour.md §1, §2): every limit answers its status or typed error and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketstore.errors import StoreLockedError
from rocketstore.message.record import Message, SysFlag
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import PutMessageStatus

SRC_DIR = Path(__file__).resolve().parents[3] / "src"
SMALL = StoreConfig(mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=20 * 8, max_hash_slot_num=4,
                    max_index_num=8)
ROOMY = StoreConfig(mapped_file_size_commit_log=1 << 17, mapped_file_size_consume_queue=20 * 8)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", SMALL) as s:
        yield s


@pytest.fixture
def roomy_store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore.open(tmp_path / "store", ROOMY) as s:
        yield s


def assert_nothing_written(store: MessageStore, before: int) -> None:
    store.wait_dispatched()
    assert store.max_commit_log_offset == before
    assert store.topics() == {}


def put_expecting(store: MessageStore, message: Message, status: PutMessageStatus) -> None:
    before = store.max_commit_log_offset
    result = store.put(message)
    assert result.status is status, result
    assert not result.ok
    assert_nothing_written(store, before)


def record_bytes(body: int, topic: str = "T", props: int = 0) -> int:
    return 91 + body + len(topic) + props


# --- topic ----------------------------------------------------------------------------------------------


def test_topic_of_127_characters_is_accepted(store: MessageStore) -> None:
    assert store.put(Message("t" * 127, b"x")).ok


@pytest.mark.parametrize("topic", ["t" * 128, "t" * 300, ""], ids=["128-chars", "300-chars", "empty"])
def test_topic_too_long_or_empty_is_message_illegal(store: MessageStore, topic: str) -> None:
    put_expecting(store, Message(topic, b"x"), PutMessageStatus.MESSAGE_ILLEGAL)


@pytest.mark.parametrize("topic", ["a b", "a/b", "a.b", "t\u00e9", "tab\t", "\U0001F600"])
def test_topic_with_characters_outside_the_allowed_set_is_message_illegal(store: MessageStore, topic: str) -> None:
    put_expecting(store, Message(topic, b"x"), PutMessageStatus.MESSAGE_ILLEGAL)


@pytest.mark.parametrize("topic", ["t" * 128, "", "a b"], ids=["128-chars", "empty", "space"])
def test_invalid_topic_of_a_delayed_message_is_message_illegal(store: MessageStore, topic: str) -> None:
    put_expecting(store, Message.create(topic, b"x", properties={"DELAY": "1"}), PutMessageStatus.MESSAGE_ILLEGAL)


# --- properties -----------------------------------------------------------------------------------------


def test_properties_of_32767_bytes_are_accepted(roomy_store: MessageStore) -> None:
    props = {"p": "v" * (32767 - 2)}  # "p" + \x01 + value
    result = roomy_store.put(Message("T", b"", props))
    assert result.ok, result
    assert result.wrote_bytes == record_bytes(0, props=32767)


def test_properties_longer_than_32767_characters_are_message_illegal(roomy_store: MessageStore) -> None:
    put_expecting(roomy_store, Message("T", b"", {"p": "v" * 32766}), PutMessageStatus.MESSAGE_ILLEGAL)


def test_properties_over_32767_bytes_within_32767_characters_exceed_the_properties_size(
        roomy_store: MessageStore) -> None:
    value = "\u00e9" * 16383  # 16385 characters in all, 32768 bytes
    put_expecting(roomy_store, Message("T", b"", {"p": value}), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)


def test_properties_of_multi_byte_characters_at_exactly_32767_bytes_are_accepted(roomy_store: MessageStore) -> None:
    value = "\u00e9" * 16382 + "v"  # p \x01 + 32765 bytes = 32767
    assert roomy_store.put(Message("T", b"", {"p": value})).ok


def test_properties_size_is_checked_before_the_record_size(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, ROOMY.replace(max_message_size=1000)) as store:
        put_expecting(store, Message("T", b"x" * 2000, {"p": "\u00e9" * 16383}), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)


# --- record size ----------------------------------------------------------------------------------------


def test_record_of_exactly_max_message_size_is_accepted(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(max_message_size=1000)) as store:
        result = store.put(Message("T", b"x" * (1000 - record_bytes(0))))
        assert result.ok
        assert result.wrote_bytes == 1000


def test_record_over_max_message_size_is_message_illegal(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(max_message_size=1000)) as store:
        put_expecting(store, Message("T", b"x" * (1001 - record_bytes(0))), PutMessageStatus.MESSAGE_ILLEGAL)


def test_max_message_size_counts_the_whole_record_not_just_the_body(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(max_message_size=1000)) as store:
        put_expecting(store, Message("T", b"x" * 950), PutMessageStatus.MESSAGE_ILLEGAL)


def test_record_that_fills_a_segment_but_eight_bytes_is_accepted(store: MessageStore) -> None:
    result = store.put(Message("T", b"x" * (4096 - 8 - record_bytes(0))))
    assert result.ok
    assert (result.commit_log_offset, result.wrote_bytes) == (0, 4088)


def test_record_that_cannot_fit_a_segment_is_message_illegal(store: MessageStore) -> None:
    # 4089 bytes + an 8-byte blank would not fit a 4096-byte segment, even an empty one
    put_expecting(store, Message("T", b"x" * (4089 - record_bytes(0))), PutMessageStatus.MESSAGE_ILLEGAL)


def test_a_failed_put_leaves_the_queue_offsets_dense(store: MessageStore) -> None:
    assert store.put(Message("T", b"a")).queue_offset == 0
    assert store.put(Message("T", b"x" * 5000)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put(Message("T", b"b")).queue_offset == 1


@pytest.mark.parametrize("field", [{"flag": 2**31}, {"reconsume_times": -(2**31) - 1}, {"born_timestamp": 2**63},
                                   {"prepared_transaction_offset": -(2**63) - 1}])
def test_out_of_range_numeric_fields_are_message_illegal(store: MessageStore, field: dict[str, int]) -> None:
    put_expecting(store, Message("T", b"x", **field), PutMessageStatus.MESSAGE_ILLEGAL)  # type: ignore[arg-type]


@pytest.mark.parametrize("queue_id", [-1, 2**31])
def test_queue_id_outside_a_java_int_is_message_illegal(store: MessageStore, queue_id: int) -> None:
    put_expecting(store, Message("T", b"x", queue_id=queue_id), PutMessageStatus.MESSAGE_ILLEGAL)


# --- batches --------------------------------------------------------------------------------------------


def put_batch_expecting(store: MessageStore, batch: list[Message], status: PutMessageStatus) -> None:
    before = store.max_commit_log_offset
    result = store.put_batch(batch)
    assert result.status is status, result
    assert_nothing_written(store, before)


def test_batch_of_one_topic_and_queue_gets_consecutive_offsets(store: MessageStore) -> None:
    store.put(Message("T", b"first"))
    result = store.put_batch([Message("T", b"a"), Message("T", b"bb"), Message("T", b"ccc")])
    assert result.ok
    assert (result.queue_offset, result.message_count) == (1, 3)
    assert result.wrote_bytes == sum(record_bytes(n) for n in (1, 2, 3))
    assert len(result.msg_id.split(",")) == 3


def test_batch_of_mixed_topics_is_message_illegal(store: MessageStore) -> None:
    put_batch_expecting(store, [Message("A", b"1"), Message("B", b"2")], PutMessageStatus.MESSAGE_ILLEGAL)


def test_batch_of_mixed_queues_is_message_illegal(store: MessageStore) -> None:
    put_batch_expecting(store, [Message("A", b"1", queue_id=0), Message("A", b"2", queue_id=1)],
                        PutMessageStatus.MESSAGE_ILLEGAL)


@pytest.mark.parametrize("level", ["1", "18", "99"])
def test_batch_with_a_delayed_message_is_message_illegal(store: MessageStore, level: str) -> None:
    put_batch_expecting(store, [Message("A", b"1"), Message.create("A", b"2", properties={"DELAY": level})],
                        PutMessageStatus.MESSAGE_ILLEGAL)


def test_batch_with_delay_level_zero_is_accepted(store: MessageStore) -> None:
    assert store.put_batch([Message.create("A", b"1", properties={"DELAY": "0"})]).ok


@pytest.mark.parametrize("tx", [SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE,
                                SysFlag.TRANSACTION_ROLLBACK_TYPE])
def test_transactional_batch_is_message_illegal(store: MessageStore, tx: int) -> None:
    put_batch_expecting(store, [Message("A", b"1"), Message("A", b"2", sys_flag=tx)],
                        PutMessageStatus.MESSAGE_ILLEGAL)


def test_empty_batch_is_message_illegal(store: MessageStore) -> None:
    put_batch_expecting(store, [], PutMessageStatus.MESSAGE_ILLEGAL)


def test_batch_over_max_message_size_is_message_illegal(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(max_message_size=1000)) as store:
        each = Message("T", b"x" * (400 - record_bytes(0)))
        assert store.put_batch([each, each]).ok  # 800 bytes
        before = store.max_commit_log_offset
        assert store.put_batch([each, each, each]).status is PutMessageStatus.MESSAGE_ILLEGAL  # 1200 bytes
        store.wait_dispatched()
        assert store.max_commit_log_offset == before
        assert store.max_offset("T", 0) == 2


def test_batch_that_cannot_fit_a_segment_is_message_illegal(store: MessageStore) -> None:
    each = Message("T", b"x" * (1030 - record_bytes(0)))
    put_batch_expecting(store, [each] * 4, PutMessageStatus.MESSAGE_ILLEGAL)  # 4120 + 8 > 4096


def test_batch_with_one_invalid_message_writes_none_of_it(store: MessageStore) -> None:
    put_batch_expecting(store, [Message("T", b"ok"), Message("T", b"", {"p": "v" * 40000})],
                        PutMessageStatus.MESSAGE_ILLEGAL)
    put_batch_expecting(store, [Message("T" * 128, b"ok")], PutMessageStatus.MESSAGE_ILLEGAL)


# --- store state ----------------------------------------------------------------------------------------


def test_put_on_a_closed_store_is_service_not_available(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path, SMALL)
    store.close()
    assert store.put(Message("T", b"x")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.put_batch([Message("T", b"x")]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    with MessageStore.open(tmp_path, SMALL) as reopened:
        assert reopened.max_commit_log_offset == 0


def test_put_on_a_slave_is_service_not_available(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL.replace(broker_role=BrokerRole.SLAVE)) as store:
        put_expecting(store, Message("T", b"x"), PutMessageStatus.SERVICE_NOT_AVAILABLE)
        assert store.put_batch([Message("T", b"x")]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_put_on_a_read_only_store_is_service_not_available(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as store:
        assert store.put(Message("T", b"x")).ok
    with MessageStore.open(tmp_path, SMALL, read_only=True) as store:
        before = store.max_commit_log_offset
        assert store.put(Message("T", b"y")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.put_batch([Message("T", b"y")]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.max_commit_log_offset == before
        assert store.max_offset("T", 0) == 1


# --- the lock ---------------------------------------------------------------------------------------------


def open_in_subprocess(path: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys\n"
            "from rocketstore.store.message_store import MessageStore\n"
            "from rocketstore.store.config import StoreConfig\n"
            "s = MessageStore.open(sys.argv[1], StoreConfig(mapped_file_size_commit_log=4096))\n"
            "s.close()\n"
            "print('OPENED')\n")
    env = dict(os.environ, PYTHONPATH=str(SRC_DIR))
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def test_second_open_in_the_same_process_raises_store_locked_error(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL):
        with pytest.raises(StoreLockedError) as info:
            MessageStore.open(tmp_path, SMALL)
        assert info.value.path == str(tmp_path)
    with MessageStore.open(tmp_path, SMALL) as again:  # released on close
        assert again.put(Message("T", b"x")).ok


def test_second_open_from_another_process_raises_store_locked_error(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL):
        done = open_in_subprocess(tmp_path)
        assert done.returncode != 0
        assert "StoreLockedError" in done.stderr
        assert "OPENED" not in done.stdout
    done = open_in_subprocess(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "OPENED" in done.stdout


def test_lock_file_holds_the_ascii_word_lock(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL):
        assert (tmp_path / "lock").read_bytes()[:4] == b"lock"


def test_reading_the_lock_file_in_process_keeps_other_processes_out(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL):
        (tmp_path / "lock").read_bytes()  # open + close of another descriptor, as shutil.copytree does
        done = open_in_subprocess(tmp_path)
        assert "StoreLockedError" in done.stderr, done.stdout


def test_read_only_open_works_beside_a_writer(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path, SMALL) as writer:
        assert writer.put(Message("T", b"x")).ok
        writer.flush()
        with MessageStore.open(tmp_path, SMALL, read_only=True) as reader:
            assert reader.max_offset("T", 0) == 1
