"""Typed custom headers: the `extFields` of each request and response the broker and name server handle.

Owns one frozen dataclass per header, each mapping snake_case attributes to the exact wire names, and the
Java parsing rules for their values: int via Integer.parseInt, long via Long.parseLong, boolean via
Boolean.parseBoolean (only a case-insensitive "true" is true), strings verbatim.  A missing required field
(`@CFNotNull` in Java) or a malformed number raises :class:`HeaderFieldError`.  SEND_MESSAGE_V2 and
SEND_BATCH_MESSAGE carry the send header under one-letter names; both spellings decode to
:class:`SendMessageRequestHeader`.

LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, HEART_BEAT and the cluster/topic-list requests have no custom header (their
data is the JSON body), so they have no class here.

Headers are immutable values, safe to share between threads.  Pure: imports only errors and remoting.codes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Self

from rocketstore.errors import ProtocolError
from rocketstore.remoting.codes import RequestCode

__all__ = [
    "REQUEST_HEADER_TYPES",
    "RESPONSE_HEADER_TYPES",
    "SEND_MESSAGE_V2_CODES",
    "UNIQUE_KEY_QUERY_FIELD",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CommandHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "HeaderFieldError",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendHeaderFields",
    "SendMessageRequestHeader",
    "SendMessageResponseHeader",
    "UnregisterBrokerRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "parse_java_boolean",
    "parse_java_int",
    "parse_java_long",
    "parse_request_header",
    "parse_send_message_header",
    "send_message_header_fields",
]


class HeaderFieldError(ProtocolError):
    """A custom header field that is missing or cannot be parsed; `field_name` is its wire name."""

    def __init__(self, field_name: str, reason: str, value: str | None = None) -> None:
        self.field_name = field_name
        self.reason = reason
        self.value = value
        shown = "" if value is None else f" (got {value[:64]!r})"
        super().__init__(f"header field {field_name!r} {reason}{shown}")


# --- Java value parsing --------------------------------------------------------------------------

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_SIGNS = ("+", "-")


def _parse_java_integer(text: str, low: int, high: int, kind: str) -> int:
    # Java's Character.digit takes any Unicode decimal digit, which is what str.isdecimal() tests; int()
    # alone would also take surrounding blanks and underscores, which Java rejects.
    digits = text[1:] if text[:1] in _SIGNS else text
    if not digits.isdecimal():
        raise ValueError(f"{text[:64]!r} is not a decimal {kind}")
    value = int(text)  # may itself raise ValueError past Python's 4300-digit limit
    if not low <= value <= high:
        raise ValueError(f"{text[:64]!r} is out of range for a {kind}")
    return value


def parse_java_int(text: str) -> int:
    """Integer.parseInt: optional sign, decimal digits, 32-bit range; ValueError otherwise."""
    return _parse_java_integer(text, _INT_MIN, _INT_MAX, "int")


def parse_java_long(text: str) -> int:
    """Long.parseLong: optional sign, decimal digits, 64-bit range; ValueError otherwise."""
    return _parse_java_integer(text, _LONG_MIN, _LONG_MAX, "long")


def parse_java_boolean(text: str) -> bool:
    """Boolean.parseBoolean: "true" in any case is True, anything else (even "1" or "yes") is False."""
    return len(text) == 4 and text.lower() == "true"


def _parse_marker(text: str) -> bool:
    return text == "true"


# --- the field table machinery ---------------------------------------------------------------------


class _Kind(Enum):
    STRING = "string"
    INT = "int"
    LONG = "long"
    BOOLEAN = "boolean"
    # Present-and-exactly-"true" marker, compared case-sensitively (how _UNIQUE_KEY_QUERY is read).
    MARKER = "marker"


_PARSERS: dict[_Kind, Callable[[str], object] | None] = {
    _Kind.STRING: None,
    _Kind.INT: parse_java_int,
    _Kind.LONG: parse_java_long,
    _Kind.BOOLEAN: parse_java_boolean,
    _Kind.MARKER: _parse_marker,
}


def _req(wire: str, kind: _Kind = _Kind.STRING) -> Any:
    return field(metadata={"wire": wire, "kind": kind, "required": True})


def _opt(wire: str, kind: _Kind = _Kind.STRING, default: object = None) -> Any:
    return field(default=default, metadata={"wire": wire, "kind": kind, "required": False})


@dataclass(frozen=True, slots=True)
class _Spec:
    attr: str
    wire: str
    kind: _Kind
    required: bool
    parse: Callable[[str], object] | None  # None: the string itself


_SPEC_CACHE: dict[tuple[type, bool], tuple[_Spec, ...]] = {}

# SendMessageRequestHeaderV2's one-letter names, keyed by the v1 wire name.
_SEND_V2_NAMES = {
    "producerGroup": "a",
    "topic": "b",
    "defaultTopic": "c",
    "defaultTopicQueueNums": "d",
    "queueId": "e",
    "sysFlag": "f",
    "bornTimestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsumeTimes": "j",
    "unitMode": "k",
    "maxReconsumeTimes": "l",
    "batch": "m",
}


def _specs(cls: type, v2: bool = False) -> tuple[_Spec, ...]:
    specs = _SPEC_CACHE.get((cls, v2))
    if specs is None:
        specs = tuple(
            _Spec(
                attr=f.name,
                wire=_SEND_V2_NAMES[f.metadata["wire"]] if v2 else f.metadata["wire"],
                kind=f.metadata["kind"],
                required=f.metadata["required"],
                parse=_PARSERS[f.metadata["kind"]],
            )
            for f in dataclasses.fields(cls)
        )
        _SPEC_CACHE[(cls, v2)] = specs
    return specs


def _decode(cls: type, specs: tuple[_Spec, ...], ext_fields: Mapping[str, str]) -> Any:
    values: dict[str, object] = {}
    for spec in specs:
        raw = ext_fields.get(spec.wire)
        if raw is None:
            if spec.required:
                raise HeaderFieldError(spec.wire, "is missing")
            continue
        if type(raw) is not str:
            raise HeaderFieldError(spec.wire, f"is a {type(raw).__name__}, not a string")
        parse = spec.parse
        if parse is None:
            values[spec.attr] = raw
            continue
        try:
            values[spec.attr] = parse(raw)
        except ValueError as exc:
            raise HeaderFieldError(spec.wire, f"is not a valid {spec.kind.value}", raw) from exc
    return cls(**values)


def _encode(header: object, specs: tuple[_Spec, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        value = getattr(header, spec.attr)
        if value is None:  # Java leaves null fields out of extFields
            continue
        kind = spec.kind
        if kind is _Kind.STRING:
            out[spec.wire] = value if type(value) is str else str(value)
        elif kind is _Kind.BOOLEAN:
            out[spec.wire] = "true" if value else "false"
        elif kind is _Kind.MARKER:
            if value:
                out[spec.wire] = "true"
        else:
            out[spec.wire] = str(int(value))
    return out


class CommandHeader:
    """Base of every header: `from_ext_fields` parses Java-style, `to_ext_fields` renders all-strings."""

    __slots__ = ()

    @classmethod
    def from_ext_fields(cls, ext_fields: Mapping[str, str]) -> Self:
        """Parse the header; unknown keys are ignored.  Raises HeaderFieldError."""
        header: Self = _decode(cls, _specs(cls), ext_fields)
        return header

    def to_ext_fields(self) -> dict[str, str]:
        """The header as extFields: every value a string, None fields left out."""
        return _encode(self, _specs(type(self)))


_STR, _INT, _LONG, _BOOL = _Kind.STRING, _Kind.INT, _Kind.LONG, _Kind.BOOLEAN


# --- send (10, 310, 320, 324, 325) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (v1 names) and SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE (one-letter names, see *_v2)."""

    producer_group: str = _req("producerGroup")
    topic: str = _req("topic")
    default_topic: str = _req("defaultTopic")
    default_topic_queue_nums: int = _req("defaultTopicQueueNums", _INT)
    queue_id: int = _req("queueId", _INT)  # negative: the broker picks a queue
    sys_flag: int = _req("sysFlag", _INT)
    born_timestamp: int = _req("bornTimestamp", _LONG)  # ms
    flag: int = _req("flag", _INT)
    properties: str | None = _opt("properties")
    reconsume_times: int | None = _opt("reconsumeTimes", _INT)
    unit_mode: bool = _opt("unitMode", _BOOL, False)
    # Batch is decided by this flag, not by the request code: C++ sends batches as code 10 or 310.
    batch: bool = _opt("batch", _BOOL, False)
    max_reconsume_times: int | None = _opt("maxReconsumeTimes", _INT)

    @classmethod
    def from_ext_fields(cls, ext_fields: Mapping[str, str]) -> Self:
        """Parse the v1 spelling (producerGroup ... batch).  Raises HeaderFieldError."""
        header = _decode_send_fast(cls, _SEND_V1_WIRE, ext_fields) if cls is SendMessageRequestHeader else None
        if header is None:
            header = _decode(cls, _specs(cls), ext_fields)
        return header  # type: ignore[no-any-return]

    @classmethod
    def from_ext_fields_v2(cls, ext_fields: Mapping[str, str]) -> Self:
        """Parse the one-letter spelling (a = producerGroup ... m = batch)."""
        header = _decode_send_fast(cls, _SEND_V2_WIRE, ext_fields) if cls is SendMessageRequestHeader else None
        if header is None:
            header = _decode(cls, _specs(cls, v2=True), ext_fields)
        return header  # type: ignore[no-any-return]

    def to_ext_fields_v2(self) -> dict[str, str]:
        return _encode(self, _specs(type(self), v2=True))


# The send header's wire names in field order, both spellings.
_SEND_V1_WIRE = tuple(f.metadata["wire"] for f in dataclasses.fields(SendMessageRequestHeader))
_SEND_V2_WIRE = tuple(_SEND_V2_NAMES[name] for name in _SEND_V1_WIRE)
_SEND_SETTERS = tuple(getattr(SendMessageRequestHeader, f.name).__set__
                      for f in dataclasses.fields(SendMessageRequestHeader))
_SEND_GETTERS = tuple(getattr(SendMessageRequestHeader, f.name).__get__
                      for f in dataclasses.fields(SendMessageRequestHeader))
_new = object.__new__


#: SendMessageRequestHeader's values in field order, as a plain tuple (:func:`send_message_header_fields`)
SendHeaderFields = tuple[str, str, str, int, int, int, int, int, str | None, int | None, bool, bool, int | None]


def send_message_header_fields(code: int, ext_fields: Mapping[str, str]) -> SendHeaderFields:
    """``parse_send_message_header(code, ext_fields)``'s values in field order (producer_group, topic,
    default_topic, default_topic_queue_nums, queue_id, sys_flag, born_timestamp, flag, properties,
    reconsume_times, unit_mode, batch, max_reconsume_times) without building the header object: the
    broker's send path reads each of them once.  Raises HeaderFieldError as the parser does."""
    fields = _read_send_fast(_SEND_V2_WIRE if code in SEND_MESSAGE_V2_CODES else _SEND_V1_WIRE, ext_fields)
    if fields is None:
        header = parse_send_message_header(code, ext_fields)
        fields = tuple(getter(header) for getter in _SEND_GETTERS)  # type: ignore[assignment]
    return fields  # type: ignore[return-value]


def _read_send_fast(wire: tuple[str, ...], ext_fields: Mapping[str, str]) -> SendHeaderFields | None:
    """The send header's values read without the generic field table, for the well-formed header every
    send carries: plain decimal numbers that cannot overflow their Java type, strings where strings belong.
    Returns None for anything else (a sign, a missing or odd field), and the caller then runs the generic
    reader, which gives the same value or raises the precise HeaderFieldError."""
    get = ext_fields.get
    (w_group, w_topic, w_default_topic, w_queue_nums, w_queue_id, w_sys_flag, w_born, w_flag, w_properties,
     w_reconsume, w_unit_mode, w_batch, w_max_reconsume) = wire
    group, topic, default_topic = get(w_group), get(w_topic), get(w_default_topic)
    if type(group) is not str or type(topic) is not str or type(default_topic) is not str:
        return None
    # at most 9 digits fit an int, 18 a long, whatever the digits
    raw = get(w_queue_nums)
    if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
        return None
    queue_nums = int(raw)
    raw = get(w_queue_id)
    if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
        return None
    queue_id = int(raw)
    raw = get(w_sys_flag)
    if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
        return None
    sys_flag = int(raw)
    raw = get(w_born)
    if type(raw) is not str or not raw.isdecimal() or len(raw) > 18:
        return None
    born = int(raw)
    raw = get(w_flag)
    if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
        return None
    flag = int(raw)
    properties = get(w_properties)
    if properties is not None and type(properties) is not str:
        return None
    raw = get(w_reconsume)
    reconsume: int | None = None
    if raw is not None:
        if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
            return None
        reconsume = int(raw)
    raw = get(w_unit_mode)
    if raw is not None and type(raw) is not str:
        return None
    unit_mode = raw is not None and len(raw) == 4 and raw.lower() == "true"  # parse_java_boolean
    raw = get(w_batch)
    if raw is not None and type(raw) is not str:
        return None
    batch = raw is not None and len(raw) == 4 and raw.lower() == "true"
    raw = get(w_max_reconsume)
    max_reconsume: int | None = None
    if raw is not None:
        if type(raw) is not str or not raw.isdecimal() or len(raw) > 9:
            return None
        max_reconsume = int(raw)
    return (group, topic, default_topic, queue_nums, queue_id, sys_flag, born, flag, properties, reconsume,
            unit_mode, batch, max_reconsume)


def _decode_send_fast(cls: type, wire: tuple[str, ...], ext_fields: Mapping[str, str]) -> Any:
    """:func:`_read_send_fast` as a header object (None when it declines).  One send costs one of these,
    so the slots are filled directly instead of through the frozen dataclass's keyword ``__init__``."""
    fields = _read_send_fast(wire, ext_fields)
    if fields is None:
        return None
    header: Any = _new(cls)
    for setter, value in zip(_SEND_SETTERS, fields, strict=True):
        setter(header, value)
    return header


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader(CommandHeader):
    """Send responses with codes 0, 10, 11, 12; MSG_REGION and TRACE_ON ride along as extFields."""

    msg_id: str = _req("msgId")  # offset msg id; comma-joined for a batch
    queue_id: int = _req("queueId", _INT)
    queue_offset: int = _req("queueOffset", _LONG)
    transaction_id: str | None = _opt("transactionId")
    msg_region: str | None = _opt("MSG_REGION")
    trace_on: bool | None = _opt("TRACE_ON", _BOOL)


# --- pull and offsets ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    queue_offset: int = _req("queueOffset", _LONG)
    max_msg_nums: int = _req("maxMsgNums", _INT)
    sys_flag: int = _req("sysFlag", _INT)
    commit_offset: int = _req("commitOffset", _LONG)
    suspend_timeout_ms: int = _req("suspendTimeoutMillis", _LONG)
    subscription: str | None = _opt("subscription")
    sub_version: int = _req("subVersion", _LONG)
    expression_type: str | None = _opt("expressionType")  # None means TAG


@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    suggest_which_broker_id: int = _req("suggestWhichBrokerId", _LONG)
    next_begin_offset: int = _req("nextBeginOffset", _LONG)
    min_offset: int = _req("minOffset", _LONG)
    max_offset: int = _req("maxOffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    commit_offset: int = _req("commitOffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)
    timestamp_ms: int = _req("timestamp", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    topic: str = _req("topic")
    queue_id: int = _req("queueId", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp_ms: int = _req("timestamp", _LONG)


# --- query, view, send back, transactions ---------------------------------------------------------------

UNIQUE_KEY_QUERY_FIELD = "_UNIQUE_KEY_QUERY"


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader(CommandHeader):
    topic: str = _req("topic")
    key: str = _req("key")
    max_num: int = _req("maxNum", _INT)
    begin_timestamp_ms: int = _req("beginTimestamp", _LONG)
    end_timestamp_ms: int = _req("endTimestamp", _LONG)
    # Not a Java header field but an extra extField the processor compares with "true" exactly.
    unique_key_query: bool = _opt(UNIQUE_KEY_QUERY_FIELD, _Kind.MARKER, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp_ms: int = _req("indexLastUpdateTimestamp", _LONG)
    index_last_update_commit_log_offset: int = _req("indexLastUpdatePhyoffset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandHeader):
    commit_log_offset: int = _req("offset", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    commit_log_offset: int = _req("offset", _LONG)  # of the consumed message
    group: str = _req("group")
    delay_level: int = _req("delayLevel", _INT)
    origin_msg_id: str | None = _opt("originMsgId")
    origin_topic: str | None = _opt("originTopic")
    unit_mode: bool = _opt("unitMode", _BOOL, False)
    max_reconsume_times: int | None = _opt("maxReconsumeTimes", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader(CommandHeader):
    producer_group: str = _req("producerGroup")
    tran_state_table_offset: int = _req("tranStateTableOffset", _LONG)  # queue offset of the half message
    commit_log_offset: int = _req("commitLogOffset", _LONG)  # of the half message
    commit_or_rollback: int = _req("commitOrRollback", _INT)  # 0 unknown, 8 commit, 12 rollback
    from_transaction_check: bool = _opt("fromTransactionCheck", _BOOL, False)
    msg_id: str = _req("msgId")
    transaction_id: str | None = _opt("transactionId")


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """Broker -> producer, oneway."""

    tran_state_table_offset: int = _req("tranStateTableOffset", _LONG)
    commit_log_offset: int = _req("commitLogOffset", _LONG)
    msg_id: str | None = _opt("msgId")
    transaction_id: str | None = _opt("transactionId")
    offset_msg_id: str | None = _opt("offsetMsgId")


# --- clients and admin ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(CommandHeader):
    client_id: str = _req("clientID")
    producer_group: str | None = _opt("producerGroup")  # C++ sends "" for the unused group
    consumer_group: str | None = _opt("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """Broker -> consumer, oneway."""

    consumer_group: str = _req("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicRequestHeader(CommandHeader):
    topic: str = _req("topic")
    default_topic: str = _req("defaultTopic")
    read_queue_nums: int = _req("readQueueNums", _INT)
    write_queue_nums: int = _req("writeQueueNums", _INT)
    perm: int = _req("perm", _INT)
    topic_filter_type: str = _req("topicFilterType")  # SINGLE_TAG / MULTI_TAG
    topic_sys_flag: int | None = _opt("topicSysFlag", _INT)
    # Required in Java but initialised to false there, so its absence is never an error.
    order: bool = _opt("order", _BOOL, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER and DELETE_TOPIC_IN_NAMESRV."""

    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str = _req("producerGroup")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """Admin -> broker -> the consumer (the broker forwards the same extFields)."""

    consumer_group: str = _req("consumerGroup")
    client_id: str = _req("clientId")
    jstack_enable: bool = _opt("jstackEnable", _BOOL, False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY, admin -> broker -> the consumer; the broker adds brokerName and the stored
    record as the body."""

    consumer_group: str = _req("consumerGroup")
    client_id: str | None = _opt("clientId")
    msg_id: str | None = _opt("msgId")
    broker_name: str | None = _opt("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str = _req("consumerGroup")
    topic: str | None = _opt("topic")  # blank: every topic the group has offsets for


# --- name server -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    ha_server_addr: str = _req("haServerAddr")
    broker_id: int = _req("brokerId", _LONG)
    compressed: bool = _opt("compressed", _BOOL, False)
    body_crc32: int = _opt("bodyCrc32", _INT, 0)  # 0: not checked


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = _opt("haServerAddr")
    master_addr: str | None = _opt("masterAddr")


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    broker_id: int = _req("brokerId", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str = _req("topic")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")
    broker_addr: str = _req("brokerAddr")
    cluster_name: str = _req("clusterName")
    broker_id: int = _req("brokerId", _LONG)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool = _req("changed", _BOOL)


@dataclass(frozen=True, slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")
    value: str = _req("value")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = _opt("value")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = _req("namespace")
    key: str = _req("key")


@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = _req("namespace")


@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int = _req("wipeTopicCount", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str = _req("brokerName")


@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int = _req("addTopicCount", _INT)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str = _req("cluster")


# --- dispatch tables ---------------------------------------------------------------------------------------

# Codes whose send header uses the one-letter names.
SEND_MESSAGE_V2_CODES: frozenset[int] = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)

REQUEST_HEADER_TYPES: dict[int, type[CommandHeader]] = {
    RequestCode.SEND_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeader,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    RequestCode.END_TRANSACTION: EndTransactionRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RequestCode.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: UnregisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    RequestCode.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    RequestCode.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    RequestCode.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    RequestCode.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DeleteTopicRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
}

# Response header of a successful answer, keyed by the request code.
RESPONSE_HEADER_TYPES: dict[int, type[CommandHeader]] = {
    RequestCode.SEND_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.PULL_MESSAGE: PullMessageResponseHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageResponseHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerResponseHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigResponseHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
}


def parse_send_message_header(code: int, ext_fields: Mapping[str, str]) -> SendMessageRequestHeader:
    """The send header of a request with `code`, read under the one-letter names for the v2 codes."""
    if code in SEND_MESSAGE_V2_CODES:
        return SendMessageRequestHeader.from_ext_fields_v2(ext_fields)
    return SendMessageRequestHeader.from_ext_fields(ext_fields)


def parse_request_header(code: int, ext_fields: Mapping[str, str]) -> CommandHeader | None:
    """The typed header of a request with `code`; None for codes without a header table here."""
    if code in SEND_MESSAGE_V2_CODES:
        return SendMessageRequestHeader.from_ext_fields_v2(ext_fields)
    header_type = REQUEST_HEADER_TYPES.get(code)
    return None if header_type is None else header_type.from_ext_fields(ext_fields)
