"""The values a push consumer's user sees: settings enums, the consumed message and the handler type.

A :class:`ConsumedMessage` is what a handler gets (RocketMQ's MessageExt as the push consumer hands it
over): a message redelivered through ``%RETRY%<group>`` carries its original topic again (the
RETRY_TOPIC property), as Java's ``resetRetryAndNamespace`` does, while ``queue_id`` / ``queue_offset``
stay those of the queue it was pulled from.  ``msg_id`` is the client's UNIQ_KEY when there is one (Java's
MessageClientExt), else the broker's offset message id.

Pure values; safe to share between threads.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

from rocketstore.message.properties import HasTagsAndKeys, PropertyName
from rocketstore.message.record import StoredMessage
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "RETRY_GROUP_TOPIC_PREFIX",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "ConsumedMessage",
    "MessageHandler",
    "MessageModel",
    "local_ip",
    "new_instance_name",
    "retry_topic",
]



def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


class MessageModel(StrEnum):
    """CLUSTERING: the group shares the queues, each message goes to one member; BROADCASTING: every
    member gets every message and keeps its own offsets."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(StrEnum):
    """Where a queue starts when the group has no offset for it (see RebalancePushImpl's rules)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ConsumeStatus(StrEnum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    #: concurrently: send the messages back for a delayed retry; orderly: retry them here after a pause
    RECONSUME_LATER = "RECONSUME_LATER"


@dataclass(frozen=True, slots=True)
class ConsumedMessage(HasTagsAndKeys):
    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    msg_id: str
    offset_msg_id: str
    reconsume_times: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    flag: int
    broker_name: str
    #: the topic it was pulled from (``%RETRY%<group>`` for a redelivery), which send-back needs
    stored_topic: str
    properties: dict[str, str] = field(default_factory=dict, hash=False, compare=False)


    @property
    def delay_level(self) -> int:
        return int(self.properties.get(PropertyName.DELAY, "0") or 0)

    @classmethod
    def from_stored(cls, m: StoredMessage, broker_name: str, group: str) -> ConsumedMessage:
        props = m.properties
        topic = m.topic
        original = props.get(PropertyName.RETRY_TOPIC)
        if original and topic == retry_topic(group):
            topic = original
        offset_msg_id = m.msg_id
        return cls(topic, m.queue_id, m.queue_offset, m.body, props.get(PropertyName.UNIQ_KEY) or offset_msg_id,
                   offset_msg_id, m.reconsume_times, m.commit_log_offset, m.born_timestamp, m.store_timestamp,
                   m.flag, broker_name, m.topic, props)

    def with_reconsume_times(self, times: int) -> ConsumedMessage:
        return dataclasses.replace(self, reconsume_times=times)


#: ``handler(messages) -> ConsumeStatus`` (or an awaitable of one); an exception counts as RECONSUME_LATER
MessageHandler = Callable[[list[ConsumedMessage]], "ConsumeStatus | Awaitable[ConsumeStatus]"]


def local_ip() -> str:
    """The address other hosts would see (the route to a documentation address), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


_last_instance_ns = 0
_instance_lock = threading.Lock()


def new_instance_name() -> str:
    """``pid#nanos`` as Java's changeInstanceNameToPID: unique per consumer, even within one process."""
    global _last_instance_ns
    with _instance_lock:
        now = max(time.monotonic_ns(), _last_instance_ns + 1)
        _last_instance_ns = now
    return f"{os.getpid()}#{now}"
