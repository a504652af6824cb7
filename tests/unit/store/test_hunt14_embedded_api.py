"""The embedded store as a library user meets it: odd but accepted argument types, and a configuration that
disagrees with the files a cleanly closed store left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketstore.errors import StoreConfigError
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, PutMessageStatus
from rocketstore.store.verify import verify_store

SMALL = StoreConfig(mapped_file_size_commit_log=8192, mapped_file_size_consume_queue=200, max_hash_slot_num=16,
                    max_index_num=64)


@pytest.mark.parametrize("batch", [False, True], ids=["put", "put_batch"])
def test_a_bool_queue_id_is_queue_1_not_a_directory_named_true(tmp_path: Path, batch: bool) -> None:
    # bool is an int in Python (True == 1), and a put takes it; its consume queue was created as
    # consumequeue/T/True, which a reopen skips: the message was in no queue any more
    root = tmp_path / "store"
    with MessageStore.open(root, SMALL) as store:
        # (Message.create refuses a bool queue id with a TypeError: a Message built directly still reaches put)
        message = Message("T", b"x", {"TAGS": "a"}, queue_id=True)
        result = store.put_batch([message]) if batch else store.put(message)
        assert result.ok
        assert store.wait_dispatched()
        assert store.topics() == {"T": [1]}
        assert all(type(q) is int for q in store.topics()["T"])
    assert sorted(os.listdir(root / "consumequeue" / "T")) == ["1"]
    with MessageStore.open(root, SMALL) as store:
        got = store.get("T", 1, 0)
        assert got.status is GetMessageStatus.FOUND
        assert [m.body for m in got.messages] == [b"x"]
    with MessageStore.open(root, SMALL, read_only=True) as store:
        assert verify_store(store).ok


def _one_segment_store(root: Path) -> None:
    with MessageStore.open(root, SMALL) as store:
        for i in range(5):
            assert store.put(Message.create("T", b"m%d" % i, keys=f"k{i}")).ok
    assert os.path.getsize(root / "commitlog" / f"{0:020d}") == 8192


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read_only"])
def test_a_bigger_commitlog_segment_size_than_a_clean_store_has_is_refused_not_grown_into(
        tmp_path: Path, read_only: bool) -> None:
    # a store with one commitlog segment, closed cleanly, opened with the default (1 GiB) segment size: the
    # segment was taken for a torn tail and grown to 1 GiB, after which the store no longer opened with the
    # size it was written with (RocketMQ 4.9.3 refuses to load a segment of another size)
    root = tmp_path / "store"
    _one_segment_store(root)
    with pytest.raises(StoreConfigError, match="8192 bytes; every segment here must have 65536"):
        MessageStore.open(root, SMALL.replace(mapped_file_size_commit_log=65536), read_only=read_only)
    assert os.path.getsize(root / "commitlog" / f"{0:020d}") == 8192
    with MessageStore.open(root, SMALL) as store:
        assert store.max_offset("T", 0) == 5


def test_a_bigger_consume_queue_segment_size_than_a_clean_store_has_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _one_segment_store(root)
    with pytest.raises(StoreConfigError, match="200 bytes; every segment here must have 2000"):
        MessageStore.open(root, SMALL.replace(mapped_file_size_consume_queue=2000))
    assert os.path.getsize(root / "consumequeue" / "T" / "0" / f"{0:020d}") == 200
    with MessageStore.open(root, SMALL) as store:
        assert store.get("T", 0, 0).message_count == 5


def test_a_short_last_segment_after_a_crash_is_still_a_torn_tail(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _one_segment_store(root)
    (root / "abort").touch()
    segment = root / "commitlog" / f"{0:020d}"
    os.truncate(segment, 4096)
    with MessageStore.open(root, SMALL) as store:
        assert store.max_offset("T", 0) == 5
    assert os.path.getsize(segment) == 8192


@pytest.mark.parametrize(("name", "value"), [
    ("mapped_file_size_commit_log", 8192.0),  # a float (64e6 in a script) was taken, then every put failed
    ("mapped_file_size_commit_log", "8192"),
    ("max_message_size", 4e6),
    ("sync_flush_timeout_ms", None),
    ("message_index_enable", "false"),  # a truthy string: the index was on
    ("check_crc_on_recover", 0),
    ("store_host", None),
    ("delete_when", 4),
    ("message_delay_level", None),
])
def test_a_config_value_of_the_wrong_type_is_a_store_config_error(name: str, value: object) -> None:
    with pytest.raises(StoreConfigError, match=name):
        SMALL.replace(**{name: value})


def test_a_float_segment_size_no_longer_opens_a_store_that_refuses_every_put(tmp_path: Path) -> None:
    with pytest.raises(StoreConfigError):
        MessageStore.open(tmp_path / "store", SMALL.replace(mapped_file_size_commit_log=8192.0))


@pytest.mark.parametrize("flush", ["Wait", "sync", None])
@pytest.mark.parametrize("flush_disk_type", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_an_unknown_flush_mode_is_refused_not_taken_for_later(tmp_path: Path, flush: object,
                                                              flush_disk_type: str) -> None:
    # under SYNC_FLUSH anything but "wait" and "ask" returned at once without asking for a sync: a typo
    # gave up the durability the store was configured for, without a word
    config = SMALL.replace(flush_disk_type=flush_disk_type, flush_interval_commit_log_ms=100_000)
    with MessageStore.open(tmp_path / "store", config) as store:
        with pytest.raises(ValueError, match="flush"):
            store.put(Message.create("T", b"x"), flush=flush)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="flush"):
            store.put_batch([Message.create("T", b"x")], flush=flush)  # type: ignore[arg-type]
        assert store.max_commit_log_offset == 0
        for mode in ("wait", "ask", "later"):
            assert store.put(Message.create("T", b"x"), flush=mode).ok
            assert store.put_batch([Message.create("T", b"x")], flush=mode).ok


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read_only"])
def test_index_files_of_another_geometry_are_a_store_config_error_not_skipped(tmp_path: Path,
                                                                            read_only: bool) -> None:
    # the index files were skipped: every key written before answered nothing, and the files stayed on
    # disk for good (retention deletes only the index files it loaded)
    root = tmp_path / "store"
    _one_segment_store(root)
    index_files = sorted(os.listdir(root / "index"))
    assert index_files
    other = SMALL.replace(max_hash_slot_num=32)
    with pytest.raises(StoreConfigError, match="maxHashSlotNum=32 and maxIndexNum=64 make index files of"):
        MessageStore.open(root, other, read_only=read_only)
    assert sorted(os.listdir(root / "index")) == index_files
    with MessageStore.open(root, SMALL) as store:
        assert [m.body for m in store.query("T", "k3").messages] == [b"m3"]
    with MessageStore.open(root, other.replace(message_index_enable=False)) as store:  # no index: no check
        assert store.max_offset("T", 0) == 5


def test_properties_none_are_no_properties_and_a_list_is_message_illegal_for_put_and_put_batch(
        tmp_path: Path) -> None:
    # None: put raised TypeError (put with apply_delay=False and Message.create took it for no properties),
    # put_batch raised AttributeError from inside its checks; a list: put answered MESSAGE_ILLEGAL, put_batch
    # raised AttributeError
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        listed = Message("T", b"x", [("a", "b")])  # type: ignore[arg-type]
        assert store.put(listed).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put_batch([listed]).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.put_batch([Message("T", b"ok"), listed]).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_commit_log_offset == 0
        none = Message("T", b"n", None)  # type: ignore[arg-type]
        assert store.put(none).ok
        assert store.put_batch([none]).ok
        assert store.put_batch([Message("T", b"ok"), none]).ok
        assert store.wait_dispatched()
        got = store.get("T", 0, 0)
        assert [(m.body, m.properties_string) for m in got.messages] == [(b"n", ""), (b"n", ""), (b"ok", ""),
                                                                         (b"n", "")]


def _bodies() -> list[object]:
    import array

    return [memoryview(array.array("i", [1, 2, 3])), memoryview(b"abcdef")[::2], bytearray(b"xyz")]


@pytest.mark.parametrize("batch", [False, True], ids=["put", "put_batch"])
def test_a_body_that_is_a_buffer_of_wider_items_is_stored_whole_and_does_not_fence_the_store(
        tmp_path: Path, batch: bool) -> None:
    # len() of a memoryview counts items, not bytes: the record's sizes said 3 bytes and 12 were written, the
    # put answered UNKNOWN_ERROR and the store fenced itself (every later put SERVICE_NOT_AVAILABLE)
    bodies = _bodies()
    expected = [bytes(b) for b in bodies]  # type: ignore[call-overload]
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        for body in bodies:
            message = Message("T", body)  # type: ignore[arg-type]
            result = store.put_batch([message, message]) if batch else store.put(message)
            assert result.ok, result
        assert store.fenced is None
        assert store.put(Message("T", b"after")).ok
        assert store.wait_dispatched()
        got = [m.body for m in store.get("T", 0, 0, 32).messages]
    assert got == [b for b in expected for _ in range(2 if batch else 1)] + [b"after"]
    with MessageStore.open(tmp_path / "store", SMALL, read_only=True) as store:
        assert verify_store(store).ok
        assert store.recovery.first_invalid_reason is None


@pytest.mark.parametrize("body", [5, "text", None], ids=["int", "str", "None"])
def test_a_body_that_is_no_buffer_stays_message_illegal(tmp_path: Path, body: object) -> None:
    with MessageStore.open(tmp_path / "store", SMALL) as store:
        assert store.put(Message("T", body)).status is PutMessageStatus.MESSAGE_ILLEGAL  # type: ignore[arg-type]
        assert store.put_batch([Message("T", body)]).status is PutMessageStatus.MESSAGE_ILLEGAL  # type: ignore[arg-type]
        assert store.max_commit_log_offset == 0
