"""What a put checks and rewrites before the commitlog appends it: pure functions, no store state.

* :func:`apply_delay_level`: a message with a DELAY level goes to SCHEDULE_TOPIC_XXXX, its real topic and queue
  kept in its properties (RocketMQ's CommitLog.putMessage).
* :func:`draft_or_status`: one message checked and pre-encoded, or RocketMQ's status (and why) when it
  cannot be stored (the message-by-message batch path uses it; ``MessageStore.put`` inlines the same checks).
* :func:`fact_meta`: the rule for when a put's properties dict may stand in for the stored string as the
  dispatcher's facts (``MessageStore.put`` inlines a cheaper test held to this one by a test).

The store's hosts come in as *store_host_bytes* (the store's own, for a message without one) and
*host_bytes* (a cached ``host_bytes`` of any other), as in batch_put.py.

Must not import: message_store (the facade), reads, background; broker, remoting.
Thread-safety: pure functions, safe from any thread.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib
import struct
from collections.abc import Callable, Mapping

from rocketstore.errors import (
    InvalidTopicError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
)
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress
from rocketstore.message.java_numbers import number_format_remark, parse_java_int
from rocketstore.message.properties import NAME_VALUE_SEPARATOR as _NAME_VALUE_SEPARATOR
from rocketstore.message.properties import PROPERTY_SEPARATOR as _PROPERTY_SEPARATOR
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, RecordDraft, SysFlag, draft_message
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.results import PutMessageStatus, PutResult

__all__ = ["DelayLevelError", "apply_delay_level", "draft_or_status", "fact_meta", "illegal_remark",
           "int_fields_remark", "properties_remark"]

#: the Message fields a record holds as fixed-size integers, in the record's order
_INT_FIELDS = ("queue_id", "flag", "sys_flag", "born_timestamp", "store_timestamp", "reconsume_times",
               "prepared_transaction_offset")


class DelayLevelError(ValueError):
    """Why :func:`apply_delay_level` cannot schedule a message (the put answers MESSAGE_ILLEGAL with it)."""


def apply_delay_level(message: Message, max_delay_level: int) -> Message:
    """*message* moved to SCHEDULE_TOPIC_XXXX when it carries a DELAY level (capped at *max_delay_level*)
    and is not a transaction's half or rollback; else *message* itself.

    DelayLevelError when DELAY is no Java int (4.9.3's getDelayTimeLevel is Integer.parseInt, which throws:
    nothing is stored) or the queue id REAL_QID would keep is no queue id (the delivery could not store it)."""
    props = message.properties
    delay = props.get(PropertyName.DELAY)
    if delay is None or message.sys_flag & SysFlag.TRANSACTION_MASK not in (0, SysFlag.TRANSACTION_COMMIT_TYPE):
        return message
    try:
        level = parse_java_int(delay)
    except (ValueError, TypeError) as exc:  # (TypeError: a value that is no str)
        raise DelayLevelError(number_format_remark(str(delay))) from exc
    if level <= 0:
        return message
    queue_id = message.queue_id
    if queue_id.__class__ is not int:
        # True or a numpy integer is stored in queue 1 (see ConsumeQueueTable.find_or_create): REAL_QID says
        # the number, never "True"; a str or float is no queue id
        try:
            queue_id = operator.index(queue_id)
        except TypeError as exc:
            raise DelayLevelError(f"queue id {queue_id!r} is not an int") from exc
    if not 0 <= queue_id <= 0x7FFFFFFF:
        raise DelayLevelError(f"queue id {queue_id} is out of range")
    new_props = dict(props)
    if level > max_delay_level:
        # RocketMQ caps with setDelayTimeLevel, which rewrites DELAY: the record says the level it waits
        level = max_delay_level
        new_props[PropertyName.DELAY] = str(level)
    new_props[PropertyName.REAL_TOPIC] = message.topic
    new_props[PropertyName.REAL_QID] = str(queue_id)
    return dataclasses.replace(message, topic=SCHEDULE_TOPIC, queue_id=level - 1, properties=new_props)


def properties_remark(properties: object, exc: BaseException | None = None) -> str:
    """Why *properties* could not be encoded (encode_properties raised *exc*): the first name or value that is
    no str (the usual mistake: an int value), else *exc*'s words.  Built only for a refusal's remark."""
    if not isinstance(properties, Mapping):
        return f"properties are a mapping of str to str, not of type {type(properties).__name__}"
    fallback = (str(exc) or type(exc).__name__) if exc is not None else "properties that cannot be encoded"
    try:
        for name, value in properties.items():
            if not isinstance(name, str):
                return f"property name {reprlib.repr(name)} is of type {type(name).__name__}, not str"
            if value is not None and not isinstance(value, str):
                return (f"property {reprlib.repr(name)} has a value of type {type(value).__name__} "
                        f"({reprlib.repr(value)}): property values are str")
    except Exception:  # noqa: BLE001 - a mapping that cannot even be iterated: exc says what it can
        return fallback
    return fallback


def int_fields_remark(message: Message, exc: BaseException | None = None) -> str:
    """Why a record could not be packed from *message*: its first integer field that is no int (a float
    timestamp from ``time.time() * 1000``), else *exc*'s words.  Built only for a refusal's remark."""
    values = [(name, getattr(message, name, None)) for name in _INT_FIELDS]
    # no int at all first (what struct refuses); then an int subclass (a bool: put_batch refuses those too)
    for name, value in values:
        if value is not None and not isinstance(value, int):
            return f"{name} is of type {type(value).__name__} ({reprlib.repr(value)}), not int"
    for name, value in values:
        if value is not None and type(value) is not int:
            return f"{name} is of type {type(value).__name__} ({reprlib.repr(value)}), not int"
    return str(exc) if exc is not None else "a field the record holds as an integer is no int"


def illegal_remark(topic: str, props_text: str, queue_id: int) -> str:
    """Why a put's first length and range checks refused its message (the refusal's remark)."""
    if len(topic) > 127:
        return f"a topic of {len(topic)} characters: at most 127 allowed"
    if len(props_text) > 32767:
        return f"properties of {len(props_text)} characters: at most 32767 allowed"
    return f"queue id {queue_id} is not in 0..2147483647"


def draft_or_status(message: Message, props_text: str, store_host_bytes: bytes,
                    host_bytes: Callable[[HostAddress], bytes],
                    max_message_bytes: int) -> RecordDraft | PutResult:
    """Validate and pre-encode; when the message cannot be stored, RocketMQ's status for it in a PutResult
    whose remark says why."""
    try:
        if len(props_text) > 32767 or len(message.topic) > 127 or not 0 <= message.queue_id <= 0x7FFFFFFF:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=message.topic, queue_id=message.queue_id,
                             remark=illegal_remark(message.topic, props_text, message.queue_id))
        born = message.born_host
        store = message.store_host
        try:
            props_bytes = props_text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: '?' for it, as 4.9.3's getBytes(UTF_8) (and put)
            props_bytes = props_text.encode("utf-8", "replace")
        return draft_message(message, props_bytes,
                             store_host_bytes if born is None else host_bytes(born),
                             store_host_bytes if store is None else host_bytes(store),
                             max_message_bytes)
    except PropertiesTooLargeError as exc:
        return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, topic=message.topic,
                         queue_id=message.queue_id, remark=str(exc))
    except (MessageTooLargeError, InvalidTopicError, MessageFieldError, OverflowError, ValueError, TypeError,
            AttributeError, struct.error) as exc:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=message.topic, queue_id=message.queue_id,
                         remark=str(exc))


def fact_meta(topic: str, props: dict[str, str], props_text: str
              ) -> tuple[str, int, str | None, str | None] | None:
    """(topic, tags_code, uniq_key, keys) for the dispatcher, read from the dict the writer has; None
    (the dispatcher decodes the record) when the dict may not say what the stored string says:
    a separator inside a name or value, a None value, or a schedule-topic record (whose tagsCode is
    its delivery time)."""
    if not props:
        return (topic, 0, None, None)
    n = len(props)
    if props_text.count(_NAME_VALUE_SEPARATOR) != n or props_text.count(_PROPERTY_SEPARATOR) != n - 1 \
            or topic == SCHEDULE_TOPIC:
        return None
    tags = props.get(PropertyName.TAGS)
    return (topic, tags_code(tags) if tags else 0, props.get(PropertyName.UNIQ_KEY) or None,
            props.get(PropertyName.KEYS))
