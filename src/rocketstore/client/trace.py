"""Message trace records and their text form: RocketMQ 4.9.3's TraceDataEncoder format, no I/O.

A trace message's body is a run of records, each ended by FIELD_SEPARATOR (``\\x02``); a record's fields
are split by CONTENT_SEPARATOR (``\\x01``) and start with the trace type.  The layouts, field by field:

    Pub             type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength,
                    costTime, msgType (ordinal), offsetMsgId, success [, clientHost (older writers)]
    SubBefore       type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
    SubAfter        type, requestId, msgId, costTime, success, keys [, contextCode [, timestamp, group]]
    EndTransaction  type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, msgType,
                    transactionId, transactionState, fromTransactionCheck

What writers put there, and what :func:`decode_trace_data` therefore accepts:

* The Java client writes Java's ``String.valueOf(null)`` for a missing tag, key or region: the text
  ``null``.  Optional text fields (region, group, tags, keys, transactionId) read ``null`` back as None
  and write None as ``null``, so the Java client's own decoder (which needs every field present) reads
  what we write.
* The official C++ client 2.1 writes Pub and SubBefore as 4.9.3 does, a 6-field SubAfter (no contextCode,
  timestamp or group), the placeholder ``dKey`` for empty keys in SubBefore / SubAfter, and no
  EndTransaction.  A decoded record keeps what was written; fields it did not carry are None.
* Fields after the last one a layout knows are ignored (Java's decoder does the same, which is how newer
  writers add fields); fewer than a layout needs, a number that is not a number, a boolean that is not
  true/false, an unknown msgType ordinal or transaction state, or an unknown trace type raise
  :class:`TraceDataError` (Java's decoder would throw an index or number error, or skip the type).

A trace message's KEYS are the traced msgIds and the traced messages' own keys (split on spaces), so that
a query by key in the trace topic with a msgId finds every trace message that mentions it
(:func:`trace_keys`).  Pure values and functions; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from rocketstore.client.errors import ClientError

__all__ = [
    "CONTENT_SEPARATOR",
    "CPP_TRACE_TOPIC_PREFIX",
    "DEFAULT_REGION_ID",
    "FIELD_SEPARATOR",
    "RMQ_SYS_TRACE_TOPIC",
    "TRACE_GROUP_PREFIX",
    "ConsumeReturnType",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceDataError",
    "TraceType",
    "decode_trace_data",
    "encode_trace_context",
    "encode_trace_contexts",
    "trace_keys",
]

#: between the fields of one record (Java's TraceConstants.CONTENT_SPLITOR, char 1)
CONTENT_SEPARATOR = "\x01"
#: after each record (Java's TraceConstants.FIELD_SPLITOR, char 2)
FIELD_SEPARATOR = "\x02"
#: where the Java client sends trace data unless told otherwise (TopicValidator.RMQ_SYS_TRACE_TOPIC)
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
#: a send answer without MSG_REGION stands for this region (MixAll.DEFAULT_TRACE_REGION_ID)
DEFAULT_REGION_ID = "DefaultRegion"
#: the trace producer's group starts with this (TraceConstants.GROUP_NAME_PREFIX)
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"
#: the C++ client 2.1 sends trace data to this prefix + region id (its TraceContant::TRACE_TOPIC)
CPP_TRACE_TOPIC_PREFIX = "rmq_sys_TRACE_DATA_"
#: how Java's String.valueOf writes a null
_NULL = "null"
#: Java's Long.parseLong / Integer.parseInt accept an optional sign and ASCII digits
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class TraceDataError(ClientError):
    """Trace data that is not in the format: which record (0-based) and why."""

    def __init__(self, reason: str, record: str = "", index: int = -1) -> None:
        self.reason = reason
        self.record = record
        self.index = index
        where = f"trace record {index}" if index >= 0 else "trace record"
        shown = record if len(record) <= 120 else record[:117] + "..."
        super().__init__(f"{where}: {reason}" + (f" in {shown!r}" if record else ""))


class TraceType(StrEnum):
    """What a record traces (Java's TraceType; the names are written as they are)."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(IntEnum):
    """The kind of message a Pub or EndTransaction traces; written as its ordinal (Java's MessageType)."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(IntEnum):
    """How a handler call ended; a SubAfter's contextCode is its ordinal (Java's ConsumeReturnType)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


#: a transaction state as written (Java's LocalTransactionState names)
_TRANSACTION_STATES = frozenset({"COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"})


@dataclass(frozen=True, slots=True)
class TraceBean:
    """One traced message.  Which fields a record carries depends on its type (see the module doc);
    the others keep their defaults."""

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str | None = None
    keys: str | None = None
    store_host: str = ""
    #: only older Java writers put it in a Pub (a 15th field)
    client_host: str | None = None
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType | None = None
    transaction_id: str | None = None
    #: COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW
    transaction_state: str | None = None
    from_transaction_check: bool = False


@dataclass(frozen=True, slots=True)
class TraceContext:
    """One trace event (Java's TraceContext): a Pub, the SubBefore / SubAfter pair around one handler call
    (same ``request_id``), or an EndTransaction; ``beans`` the messages it concerns (a decoded record has
    exactly one).  ``timestamp_ms`` and ``group`` are None in a SubAfter that did not carry them."""

    trace_type: TraceType
    timestamp_ms: int | None = None
    region_id: str | None = DEFAULT_REGION_ID
    group: str | None = ""
    cost_time_ms: int = 0
    success: bool = True
    request_id: str = ""
    #: SubAfter: the ConsumeReturnType ordinal; None when the record did not carry one
    context_code: int | None = None
    beans: tuple[TraceBean, ...] = field(default_factory=tuple)

    @property
    def bean(self) -> TraceBean:
        """The first (for a decoded record, the only) bean; TraceDataError when there is none."""
        if not self.beans:
            raise TraceDataError(f"a {self.trace_type} context without a traced message")
        return self.beans[0]


# --- encoding -------------------------------------------------------------------------------------------

def _text(value: str | None, name: str) -> str:
    if value is None:
        return _NULL
    if CONTENT_SEPARATOR in value or FIELD_SEPARATOR in value:
        raise ValueError(f"trace field {name} contains a separator character: {value!r}")
    return value


def _bool(value: bool) -> str:
    return "true" if value else "false"


def encode_trace_context(ctx: TraceContext) -> str:
    """The records of *ctx* as 4.9.3's encoder writes them (each ended by FIELD_SEPARATOR): one for a Pub
    or EndTransaction (its first bean), one per bean for SubBefore / SubAfter.  ValueError when a text field
    holds a separator, a needed timestamp is None, or the context has no bean."""
    if not ctx.beans:
        raise ValueError(f"a {ctx.trace_type} context without a traced message")
    t = ctx.trace_type
    region, group = _text(ctx.region_id, "regionId"), _text(ctx.group, "groupName")
    if ctx.timestamp_ms is None:
        raise ValueError(f"a {t} context needs a timestamp to be encoded")
    stamp = str(ctx.timestamp_ms)
    records: list[list[str]] = []
    if t is TraceType.Pub:
        b = ctx.beans[0]
        records.append([t, stamp, region, group, _text(b.topic, "topic"), _text(b.msg_id, "msgId"),
                        _text(b.tags, "tags"), _text(b.keys, "keys"), _text(b.store_host, "storeHost"),
                        str(b.body_length), str(ctx.cost_time_ms), str(int(b.msg_type or MessageType.Normal_Msg)),
                        _text(b.offset_msg_id, "offsetMsgId"), _bool(ctx.success)])
    elif t is TraceType.SubBefore:
        for b in ctx.beans:
            records.append([t, stamp, region, group, _text(ctx.request_id, "requestId"), _text(b.msg_id, "msgId"),
                            str(b.retry_times), _text(b.keys, "keys")])
    elif t is TraceType.SubAfter:
        for b in ctx.beans:
            records.append([t, _text(ctx.request_id, "requestId"), _text(b.msg_id, "msgId"), str(ctx.cost_time_ms),
                            _bool(ctx.success), _text(b.keys, "keys"), str(ctx.context_code or 0), stamp, group])
    else:
        b = ctx.beans[0]
        records.append([t, stamp, region, group, _text(b.topic, "topic"), _text(b.msg_id, "msgId"),
                        _text(b.tags, "tags"), _text(b.keys, "keys"), _text(b.store_host, "storeHost"),
                        str(int(b.msg_type if b.msg_type is not None else MessageType.Trans_msg_Commit)),
                        _text(b.transaction_id, "transactionId"),
                        _text(b.transaction_state or "UNKNOW", "transactionState"), _bool(b.from_transaction_check)])
    return "".join(CONTENT_SEPARATOR.join(r) + FIELD_SEPARATOR for r in records)


def encode_trace_contexts(contexts: Iterable[TraceContext]) -> str:
    """Several contexts one after the other: a trace message's body (as text)."""
    return "".join(encode_trace_context(c) for c in contexts)


def trace_keys(ctx: TraceContext) -> list[str]:
    """The keys a trace message carrying *ctx* gets (Java's TraceTransferBean.transKey): each bean's msgId
    and each of its keys (split on spaces; a None or empty keys adds none), in order, without repeats.  A
    batch's comma-joined msgId is also split into its ids (rocketstore's addition, so that each message of a
    batch can be looked up), which come before the joined one: when a trace message cannot carry them all
    (see TraceDispatcher's max_keys_bytes), the ids a query asks for are the ones kept."""
    keys: dict[str, None] = {}
    for b in ctx.beans:
        if b.msg_id:
            if "," in b.msg_id:
                keys.update(dict.fromkeys(i for i in b.msg_id.split(",") if i))
            keys[b.msg_id] = None
        if b.keys:
            keys.update(dict.fromkeys(k for k in b.keys.split(" ") if k))
    return list(keys)


# --- decoding -------------------------------------------------------------------------------------------

class _Fields:
    """The fields of one record, read with the checks Java's decoder would fail on."""

    __slots__ = ("fields", "index", "record")

    def __init__(self, record: str, index: int) -> None:
        self.fields = record.split(CONTENT_SEPARATOR)
        self.record = record
        self.index = index

    def error(self, reason: str) -> TraceDataError:
        return TraceDataError(reason, self.record, self.index)

    def need(self, count: int) -> None:
        if len(self.fields) < count:
            raise self.error(f"a {self.fields[0]} record needs at least {count} fields, not {len(self.fields)}")

    def text(self, i: int) -> str:
        return self.fields[i]

    def optional(self, i: int) -> str | None:
        value = self.fields[i]
        return None if value == _NULL else value

    def integer(self, i: int, name: str, low: int = _INT_MIN, high: int = _INT_MAX) -> int:
        value = self.fields[i]
        if not _INTEGER.fullmatch(value):
            raise self.error(f"{name} is not a number: {value!r}")
        number = int(value)
        if not low <= number <= high:
            raise self.error(f"{name} out of range: {value}")
        return number

    def long(self, i: int, name: str) -> int:
        return self.integer(i, name, _LONG_MIN, _LONG_MAX)

    def boolean(self, i: int, name: str) -> bool:
        value = self.fields[i].lower()
        if value not in ("true", "false"):
            raise self.error(f"{name} is not true or false: {self.fields[i]!r}")
        return value == "true"

    def msg_type(self, i: int) -> MessageType:
        ordinal = self.integer(i, "msgType")
        try:
            return MessageType(ordinal)
        except ValueError:
            raise self.error(f"unknown msgType ordinal {ordinal}") from None


def _decode_pub(f: _Fields) -> TraceContext:
    f.need(13)
    n = len(f.fields)
    offset_msg_id, success_at, client_host = "", 12, None
    if n >= 14:  # 4.9.3 writes 14; older writers a 15th, the client host
        offset_msg_id, success_at = f.text(12), 13
        client_host = f.text(14) if n >= 15 else None
    bean = TraceBean(topic=f.text(4), msg_id=f.text(5), tags=f.optional(6), keys=f.optional(7),
                     store_host=f.text(8), body_length=f.integer(9, "bodyLength"), msg_type=f.msg_type(11),
                     offset_msg_id=offset_msg_id, client_host=client_host)
    return TraceContext(TraceType.Pub, f.long(1, "timestamp"), f.optional(2), f.optional(3),
                        cost_time_ms=f.integer(10, "costTime"), success=f.boolean(success_at, "success"),
                        beans=(bean,))


def _decode_sub_before(f: _Fields) -> TraceContext:
    f.need(8)
    bean = TraceBean(msg_id=f.text(5), retry_times=f.integer(6, "retryTimes"), keys=f.optional(7))
    return TraceContext(TraceType.SubBefore, f.long(1, "timestamp"), f.optional(2), f.optional(3),
                        request_id=f.text(4), beans=(bean,))


def _decode_sub_after(f: _Fields) -> TraceContext:
    f.need(6)
    n = len(f.fields)
    bean = TraceBean(msg_id=f.text(2), keys=f.optional(5))
    code = f.integer(6, "contextCode") if n >= 7 else None
    timestamp = f.long(7, "timestamp") if n >= 9 else None
    group = f.optional(8) if n >= 9 else None
    # a SubAfter carries no region: the SubBefore of the same request does
    return TraceContext(TraceType.SubAfter, timestamp, None, group, cost_time_ms=f.integer(3, "costTime"),
                        success=f.boolean(4, "success"), request_id=f.text(1), context_code=code, beans=(bean,))


def _decode_end_transaction(f: _Fields) -> TraceContext:
    f.need(13)
    state = f.text(11)
    if state not in _TRANSACTION_STATES:
        raise f.error(f"unknown transaction state {state!r}")
    bean = TraceBean(topic=f.text(4), msg_id=f.text(5), tags=f.optional(6), keys=f.optional(7),
                     store_host=f.text(8), msg_type=f.msg_type(9), transaction_id=f.optional(10),
                     transaction_state=state, from_transaction_check=f.boolean(12, "fromTransactionCheck"))
    return TraceContext(TraceType.EndTransaction, f.long(1, "timestamp"), f.optional(2), f.optional(3),
                        beans=(bean,))


_DECODERS: dict[str, Callable[[_Fields], TraceContext]] = {
    TraceType.Pub: _decode_pub, TraceType.SubBefore: _decode_sub_before, TraceType.SubAfter: _decode_sub_after,
    TraceType.EndTransaction: _decode_end_transaction}


def decode_trace_data(text: str, *, errors: list[TraceDataError] | None = None) -> list[TraceContext]:
    """The records of a trace message body, one context (with one bean) each, in order.  Empty records
    (the one after the last separator, or doubled separators) are skipped.  A malformed record raises
    :class:`TraceDataError`; with an *errors* list it is appended there instead and the rest decoded."""
    contexts: list[TraceContext] = []
    for index, record in enumerate(text.split(FIELD_SEPARATOR)):
        if not record:
            continue
        f = _Fields(record, index)
        try:
            decoder = _DECODERS.get(f.fields[0])
            if decoder is None:
                raise f.error(f"unknown trace type {f.fields[0]!r}")
            contexts.append(decoder(f))
        except TraceDataError as exc:
            if errors is None:
                raise
            errors.append(exc)
    return contexts
