"""What put_batch checks and drafts before the commitlog places a batch: column-wise, no store state.

Two kinds of batch reach the store.  A list of :class:`Message` (the embedded API) is drafted in one piece
by :func:`draft_message_list` when its messages share every field but body, flag and properties (the usual
batch); anything else it hands back to the store, which then drafts it message by message with
:func:`draft_message_list_checked` to name the first refused message's status.  A :class:`MessageBatch` (a
broker's batch send) is checked and drafted by :func:`draft_message_batch` the way RocketMQ 4.9.3 stores a
MessageExtBatch: each entry's properties bytes as sent, then the batch's own properties string.

All return the draft and the dispatch facts of its records (:data:`BatchMeta`), or say why the batch is
refused.  The store's hosts come in as *store_host_bytes* (the store's own, for a message without one) and
*host_bytes* (a cached ``host_bytes`` of any other).

Must not import: message_store (the facade), reads, background; broker, remoting.
Thread-safety: pure functions, safe from any thread.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Mapping
from itertools import repeat

from rocketstore.errors import (
    InvalidTopicError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
)
from rocketstore.message.batch import MessageBatch, key_columns
from rocketstore.message.batch_draft import BatchDraft, draft_batch
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import HostAddress
from rocketstore.message.java_numbers import number_format_remark, parse_java_int
from rocketstore.message.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    PropertyName,
    encode_properties,
    encode_properties_column,
    parse_properties,
)
from rocketstore.message.record import Message, RecordDraft, SysFlag
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.drafting import DelayLevelError, draft_or_status, int_fields_remark, properties_remark
from rocketstore.store.results import PutMessageStatus, PutResult

__all__ = ["BatchMeta", "delay_level", "draft_message_batch", "draft_message_list", "draft_message_list_checked",
           "tags_codes"]

#: dispatch facts of a batch's records: (topic, tags codes, uniq keys, keys), one of each per record
BatchMeta = tuple[str, list[int], list[str | None], list[str | None]]

_DELAY = PropertyName.DELAY
_TAGS = PropertyName.TAGS
_KEYS = PropertyName.KEYS
_UNIQ_KEY = PropertyName.UNIQ_KEY
#: what a usual batch's messages share, and the columns that differ between them
_SHARED_FIELDS = operator.attrgetter("topic", "queue_id", "sys_flag", "born_timestamp", "born_host", "store_host",
                                     "reconsume_times", "prepared_transaction_offset")
_PROPERTIES = operator.attrgetter("properties")
_FLAG = operator.attrgetter("flag")
_BODY = operator.attrgetter("body")
_BYTES_ONLY = {bytes}
_contains = operator.contains
_NO_DELAYED_BATCHES = "no delayed or transactional batches"


def delay_level(properties: Mapping[str, str]) -> int:
    """The DELAY property as 4.9.3's getDelayTimeLevel reads it (Integer.parseInt), 0 when absent;
    DelayLevelError (the batch is refused: 4.9.3's parseInt throws, nothing is stored) when it is no Java int."""
    delay = properties.get(_DELAY)
    if delay is None:
        return 0
    try:
        return parse_java_int(delay)
    except (ValueError, TypeError) as exc:
        raise DelayLevelError(number_format_remark(str(delay))) from exc


def tags_codes(tags: list[str | None]) -> list[int]:
    """tags_code of each record's TAGS: one hash for a batch of one tag (the usual), else one lookup each."""
    first = tags[0]
    if tags.count(first) == len(tags):
        return [tags_code(first)] * len(tags)
    return list(map(tags_code, tags))


def draft_message_list(batch: list[Message], store_host_bytes: bytes, host_bytes: Callable[[HostAddress], bytes],
                       max_message_bytes: int) -> tuple[BatchDraft, BatchMeta | None] | None:
    """The draft and dispatch facts of a non-empty list of messages when every message shares every field
    but body, flag and properties (the usual batch) and nothing in it is refused; None otherwise (the caller
    then checks message by message).  The facts are None when a properties map may not say what its stored
    string says (a separator inside a name or value): the dispatcher then decodes the records.  A few
    C-level passes over the batch instead of a draft per message."""
    n = len(batch)
    shared = list(map(_SHARED_FIELDS, batch))
    if shared.count(shared[0]) != n:
        return None
    topic, queue_id, sys_flag, born_ts, born, store, reconsume, prepared = shared[0]
    if type(sys_flag) is not int or sys_flag & SysFlag.TRANSACTION_MASK or topic == SCHEDULE_TOPIC:
        return None
    bodies = list(map(_BODY, batch))
    if set(map(type, bodies)) != _BYTES_ONLY:
        return None  # (len() of a memoryview may count items, not bytes: the checked path takes its bytes)
    props_of = list(map(_PROPERTIES, batch))
    try:
        if any(map(_contains, props_of, repeat(_DELAY))):
            return None
        # (properties over 32767 bytes make draft_batch raise; the checked path then says which status)
        counts = list(map(len, props_of))
        props_bytes = encode_properties_column(props_of)
        if props_bytes is not None:
            # with every value a str, a string holds at least one 0x01 per pair and one 0x02 between pairs, so
            # the batch's totals equal the pairs' exactly when each message's do
            pairs = sum(counts)
            joined = b"".join(props_bytes)
            agree = joined.count(b"\x01") == pairs and joined.count(b"\x02") == pairs - (n - counts.count(0))
        else:
            texts = list(map(encode_properties, props_of))
            props_bytes = list(map(str.encode, texts))
            agree = list(map(str.count, texts, repeat(NAME_VALUE_SEPARATOR))) == counts and \
                list(map(str.count, texts, repeat(PROPERTY_SEPARATOR))) == [c - 1 if c else 0 for c in counts]
        draft = draft_batch(topic, queue_id, list(map(_FLAG, batch)), bodies, props_bytes,
                            sys_flag=sys_flag, born_timestamp=born_ts,
                            born=store_host_bytes if born is None else host_bytes(born),
                            store=store_host_bytes if store is None else host_bytes(store),
                            reconsume_times=reconsume, prepared_offset=prepared, max_message_bytes=max_message_bytes)
        if not agree:
            return draft, None
        tags = list(map(dict.get, props_of, repeat(_TAGS)))
        uniq = list(map(dict.get, props_of, repeat(_UNIQ_KEY)))
        keys = list(map(dict.get, props_of, repeat(_KEYS)))
    except (OverflowError, ValueError, TypeError, AttributeError, struct.error, InvalidTopicError,
            MessageFieldError, MessageTooLargeError, PropertiesTooLargeError):
        return None
    if "" in uniq:
        uniq = [u or None for u in uniq]
    return draft, (topic, tags_codes(tags), uniq, keys)


def draft_message_list_checked(batch: list[Message], store_host_bytes: bytes,
                               host_bytes: Callable[[HostAddress], bytes], max_message_bytes: int
                               ) -> tuple[list[RecordDraft], list[int], BatchMeta | None] | PutResult:
    """put_batch message by message: each message drafted and checked in turn, so that a refused batch
    is answered with the status of its first refused message (the order RocketMQ checks in).  The drafts,
    their sizes and the batch's dispatch facts, or the refusal."""
    topic, queue_id = batch[0].topic, batch[0].queue_id
    drafts: list[RecordDraft] = []
    sizes: list[int] = []
    metas: list[tuple[str, int, str | None, str | None]] | None = []
    for message in batch:
        if message.topic != topic or message.queue_id != queue_id:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="a batch has one topic and queue")
        if type(message.born_timestamp) is not int or type(queue_id) is not int \
                or type(message.sys_flag) is not int:
            # caught here, not by the writer: a batch's records are written one after another, and a
            # field that cannot be packed half way would leave whole records past the write position
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                             remark=int_fields_remark(message))
        props = message.properties or {}  # None: no properties, as put takes it
        if not isinstance(props, Mapping):  # (a list of pairs: put answers it so too)
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                             remark=properties_remark(props))
        if message.sys_flag & SysFlag.TRANSACTION_MASK:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=_NO_DELAYED_BATCHES)
        if props.get(_DELAY) is not None:
            try:
                if delay_level(props) > 0:
                    return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=_NO_DELAYED_BATCHES)
            except DelayLevelError as exc:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id, remark=str(exc))
        if props:
            try:
                props_text = encode_properties(props)
            except (OverflowError, ValueError, TypeError, AttributeError, struct.error) as exc:
                return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id,
                                 remark=properties_remark(props, exc))
        else:
            props_text = ""
        draft = draft_or_status(message, props_text, store_host_bytes, host_bytes, max_message_bytes)
        if draft.__class__ is PutResult:
            return draft  # type: ignore[return-value]
        if metas is not None:
            # drafting.fact_meta inlined
            if not props:
                metas.append((topic, 0, None, None))
            elif props_text.count(NAME_VALUE_SEPARATOR) == len(props) \
                    and props_text.count(PROPERTY_SEPARATOR) == len(props) - 1 and topic != SCHEDULE_TOPIC:
                tags = props.get(_TAGS)
                metas.append((topic, tags_code(tags) if tags else 0, props.get(_UNIQ_KEY) or None,
                              props.get(_KEYS)))
            else:
                metas = None
        sizes.append(draft[1])  # type: ignore[index]
        drafts.append(draft)  # type: ignore[arg-type]
    meta = None
    if metas is not None:
        meta = (topic, [m[1] for m in metas], [m[2] for m in metas], [m[3] for m in metas])
    return drafts, sizes, meta


def draft_message_batch(batch: MessageBatch, store_host_bytes: bytes, host_bytes: Callable[[HostAddress], bytes],
                        max_message_bytes: int) -> tuple[BatchDraft, BatchMeta | None] | PutResult:
    """The draft and dispatch facts of a MessageBatch, or the refusal RocketMQ's putMessages answers: an
    empty batch, entries that are not UTF-8, a transactional or delayed batch, a record too large
    (MESSAGE_ILLEGAL), properties too long (PROPERTIES_SIZE_EXCEEDED)."""
    topic, queue_id = batch.topic, batch.queue_id
    n = len(batch.bodies)
    if not n:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="empty batch")
    if len(batch.flags) != n or len(batch.properties) != n:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="a flag and properties for every body")
    if type(batch.sys_flag) is not int:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
    if batch.sys_flag & SysFlag.TRANSACTION_MASK:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=_NO_DELAYED_BATCHES)
    suffix = batch.batch_properties
    shared = parse_properties(suffix) if suffix else {}
    props = batch.properties
    try:
        # one decode checks every entry: an ASCII separator keeps one entry's broken end from pairing up with
        # the next one's start
        joined = b"\x02".join(props)
        if not joined.isascii():
            joined.decode("utf-8")
    except (UnicodeDecodeError, TypeError):
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
    # 4.9.3's putMessages reads the DELAY of the MessageExtBatch itself (the request header's properties),
    # never an entry's: an entry's DELAY is stored as it came, in the batch's topic, as any other property
    try:
        if delay_level(shared) > 0:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=_NO_DELAYED_BATCHES)
    except DelayLevelError as exc:
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id, remark=str(exc))
    born, store = batch.born_host, batch.store_host
    try:
        draft = draft_batch(topic, queue_id, batch.flags, batch.bodies, props, suffix.encode("utf-8"),
                            sys_flag=batch.sys_flag, born_timestamp=batch.born_timestamp,
                            born=store_host_bytes if born is None else host_bytes(born),
                            store=store_host_bytes if store is None else host_bytes(store),
                            reconsume_times=batch.reconsume_times, max_message_bytes=max_message_bytes)
    except PropertiesTooLargeError:
        return PutResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, topic=topic, queue_id=queue_id)
    except (MessageTooLargeError, InvalidTopicError, MessageFieldError, OverflowError, ValueError, TypeError,
            AttributeError, struct.error):
        return PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic=topic, queue_id=queue_id)
    meta = None
    if topic != SCHEDULE_TOPIC:
        tags, uniq, keys = key_columns(props, shared)
        meta = (topic, tags_codes(tags), uniq, keys)
    return draft, meta
