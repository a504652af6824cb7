"""The values a push consumer's user sees: settings enums, the consumed message and the handler type.

A :class:`ConsumedMessage` is what a handler gets (RocketMQ's MessageExt as the push consumer hands it
over): a message redelivered through ``%RETRY%<group>`` carries its original topic again (the
RETRY_TOPIC property), as Java's ``resetRetryAndNamespace`` does, while ``queue_id`` / ``queue_offset``
stay those of the queue it was pulled from.  ``msg_id`` is the client's UNIQ_KEY when there is one (Java's
MessageClientExt), else the broker's offset message id.

Pure values; safe to share between threads.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from rocketstore.message.host import HostAddress
from rocketstore.message.properties import HasTagsAndKeys, PropertyName
from rocketstore.message.record import StoredMessage
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketstore.client.route import MessageQueue

__all__ = [
    "RETRY_GROUP_TOPIC_PREFIX",
    "ConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "ConsumedMessage",
    "MessageHandler",
    "MessageModel",
    "OrderlyContext",
    "current_context",
    "handler_context",
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
    """What a handler returns, for concurrent and orderly handlers alike: ConsumeConcurrentlyStatus's
    CONSUME_SUCCESS and RECONSUME_LATER, ConsumeOrderlyStatus's SUCCESS and SUSPEND_CURRENT_QUEUE_A_MOMENT (the
    same two members under their Java orderly names: ``ConsumeStatus.SUCCESS is ConsumeStatus.CONSUME_SUCCESS``),
    and the orderly COMMIT and ROLLBACK (deprecated in 4.9.3, still served).  :data:`ConsumeOrderlyStatus` and
    :data:`ConsumeConcurrentlyStatus` are this class under the Java names, for code ported from Java.  COMMIT
    and ROLLBACK mean something only to an orderly handler that turned ``auto_commit`` off; with it on they
    count as CONSUME_SUCCESS (4.9.3 logs that it takes them for an acknowledgement), and a concurrent
    handler's count as RECONSUME_LATER."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    #: concurrently: send the messages back for a delayed retry; orderly: retry them here after a pause
    RECONSUME_LATER = "RECONSUME_LATER"
    #: ConsumeOrderlyStatus.SUCCESS: CONSUME_SUCCESS (the same member)
    SUCCESS = "CONSUME_SUCCESS"
    #: ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: RECONSUME_LATER (the same member): the batch is
    #: handled again after the queue's pause (OrderlyContext.suspend_current_queue_s)
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "RECONSUME_LATER"
    #: orderly, ``auto_commit`` off: this batch is consumed and the queue's offset committed past everything
    #: consumed so far
    COMMIT = "COMMIT"
    #: orderly, ``auto_commit`` off: everything consumed since the last commit, this batch included, is put
    #: back and handled again (reconsume counts unchanged) after the queue's suspension
    ROLLBACK = "ROLLBACK"


#: 4.9.3's orderly handler statuses: SUCCESS, SUSPEND_CURRENT_QUEUE_A_MOMENT, COMMIT, ROLLBACK (ConsumeStatus)
ConsumeOrderlyStatus = ConsumeStatus
#: 4.9.3's concurrent handler statuses: CONSUME_SUCCESS, RECONSUME_LATER (ConsumeStatus)
ConsumeConcurrentlyStatus = ConsumeStatus


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
    #: the producer's and the storing broker's addresses (MessageExt's bornHost / storeHost; ``str()`` gives
    #: ``ip:port``) and the record's sysFlag, as stored; None / 0 for a message not made from a stored record
    born_host: HostAddress | None = field(default=None, compare=False)
    store_host: HostAddress | None = field(default=None, compare=False)
    sys_flag: int = field(default=0, compare=False)


    @property
    def delay_level(self) -> int:
        return int(self.properties.get(PropertyName.DELAY, "0") or 0)

    @classmethod
    def from_stored(cls, m: StoredMessage, broker_name: str, group: str,
                    pull_bounds: tuple[str, str] | None = None) -> ConsumedMessage:
        """*pull_bounds*: the min and max offsets of the queue as the pull that found *m* answered them, put
        in its MIN_OFFSET / MAX_OFFSET properties as every 4.9.3 consumer does (processPullResult)."""
        props = m.properties
        if pull_bounds is not None:
            props[PropertyName.MIN_OFFSET], props[PropertyName.MAX_OFFSET] = pull_bounds
        topic = m.topic
        original = props.get(PropertyName.RETRY_TOPIC)
        if original and topic == retry_topic(group):
            topic = original
        offset_msg_id = m.msg_id
        return cls(topic, m.queue_id, m.queue_offset, m.body, props.get(PropertyName.UNIQ_KEY) or offset_msg_id,
                   offset_msg_id, m.reconsume_times, m.commit_log_offset, m.born_timestamp, m.store_timestamp,
                   m.flag, broker_name, m.topic, props, m.born_host, m.store_host, m.sys_flag)

    def with_reconsume_times(self, times: int) -> ConsumedMessage:
        return dataclasses.replace(self, reconsume_times=times)


#: ``handler(messages) -> ConsumeStatus`` (or an awaitable of one); an exception counts as RECONSUME_LATER.
#: Inside the call, :func:`current_context` gives the call's :class:`ConcurrentlyContext` /
#: :class:`OrderlyContext`, through which the handler may set an ack index, a send-back delay level, an
#: orderly queue's suspension or auto-commit
MessageHandler = Callable[[list[ConsumedMessage]], "ConsumeStatus | Awaitable[ConsumeStatus]"]


#: ConsumeConcurrentlyContext's ackIndex default (Integer.MAX_VALUE): the whole batch is acknowledged
ACK_ALL = (1 << 31) - 1


@dataclass(slots=True)
class ConcurrentlyContext:
    """What a concurrent handler may tell the consumer about the call in progress (4.9.3's
    ConsumeConcurrentlyContext); read it with :func:`current_context` inside the handler.

    * ``ack_index``: on CONSUME_SUCCESS, the index of the last message of the batch that was consumed; the
      ones after it are handled as failed (CLUSTERING: sent back for a retry; BROADCASTING: dropped).  An
      index past the batch's end means all of it (the default); -1 none (anything below -1 counts as -1).
      RECONSUME_LATER fails the whole batch whatever it says.
    * ``delay_level_when_next_consume``: the delay level the failed messages are sent back with: 0 (the
      default) lets the broker choose ``3 + reconsumeTimes``, -1 sends them straight to ``%DLQ%<group>``,
      a positive level is used as it is.

    Either set to something that is no int (None, "3", 2.5) is warned of and taken as not set.
    """

    message_queue: MessageQueue
    ack_index: int = ACK_ALL
    delay_level_when_next_consume: int = 0

    def acked(self, count: int) -> int:
        """How many of a successful batch of *count* messages were consumed (the first ones)."""
        return max(0, min(self.ack_index, count - 1) + 1)


@dataclass(slots=True)
class OrderlyContext:
    """What an orderly handler may tell the consumer about the call in progress (4.9.3's
    ConsumeOrderlyContext); read it with :func:`current_context` inside the handler.

    * ``auto_commit``: True (the default) commits the queue's offset after each CONSUME_SUCCESS; False
      leaves the batch consumed but uncommitted (the offset stays before it) until a later batch returns
      COMMIT, or succeeds with ``auto_commit`` True, which commits everything consumed until then; or
      until one returns ROLLBACK, which puts everything consumed since the last commit back.
    * ``suspend_current_queue_s``: after RECONSUME_LATER, the pause before the queue's messages are handled
      again; None (the default) is the consumer's ``suspend_current_queue_s``.  Either is kept within
      0.01 .. 30 s, as 4.9.3 keeps suspendCurrentQueueTimeMillis within 10 .. 30000 ms; anything but a
      number (a str, NaN) is warned of and taken as None.
    """

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_s: float | None = None


_current: contextvars.ContextVar[ConcurrentlyContext | OrderlyContext | None] = contextvars.ContextVar(
    "rocketstore_consume_context", default=None)


def current_context() -> ConcurrentlyContext | OrderlyContext | None:
    """Inside a push consumer's handler (sync or async), the context of the call in progress, which the
    handler may change before it returns; None outside a handler call."""
    return _current.get()


@contextlib.contextmanager
def handler_context(context: ConcurrentlyContext | OrderlyContext) -> Iterator[None]:
    """Within the block, :func:`current_context` is *context* (in this task; a sync handler's thread gets
    it through a copy of this task's context)."""
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)


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
