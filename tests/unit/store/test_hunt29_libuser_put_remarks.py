"""A refused put says why in its remark (an embedded caller sees no log line): MESSAGE_ILLEGAL for a topic
of characters RocketMQ does not allow, or too long, PROPERTIES_SIZE_EXCEEDED, and SERVICE_NOT_AVAILABLE
from a closed or read-only store all came back with an empty remark, the status alone to guess from.
(The broker answers a send with 4.9.3's fixed remark for the status: not this text.)"""

from __future__ import annotations

from pathlib import Path

from rocketstore import Message, MessageStore, PutMessageStatus, StoreConfig

CONFIG = StoreConfig(mapped_file_size_commit_log=1 << 20)


def test_an_illegal_message_says_what_is_wrong(tmp_path: Path) -> None:
    with MessageStore.open(tmp_path / "s", CONFIG) as store:
        refused = store.put(Message.create("Topic\u00e9", b"x"))
        assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL
        assert "%|a-zA-Z0-9_-" in refused.remark
        refused = store.put(Message.create("T" * 128, b"x"))
        assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL and "127" in refused.remark
        refused = store.put(Message.create("T", b"x", properties={"k": "\u00e9" * 20000}))
        assert refused.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED and "32767" in refused.remark
        refused = store.put(Message.create("T", b"x" * (4 << 20)))
        assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL and "exceeds the limit" in refused.remark
        refused = store.put(Message.create("Topic\u00e9", b"x", properties={"DELAY": "3"}))
        assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL and "%|a-zA-Z0-9_-" in refused.remark


def test_a_refused_write_says_why(tmp_path: Path) -> None:
    store = MessageStore.open(tmp_path / "s", CONFIG)
    assert store.put(Message.create("T", b"x")).status is PutMessageStatus.PUT_OK
    with MessageStore.open(tmp_path / "s", CONFIG, read_only=True) as reader:
        refused = reader.put(Message.create("T", b"x"))
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "read_only" in refused.remark
    store.close()
    for refused in (store.put(Message.create("T", b"x")), store.put_batch([Message.create("T", b"x")])):
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "closed" in refused.remark
