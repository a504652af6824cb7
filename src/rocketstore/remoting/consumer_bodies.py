"""The JSON bodies of the calls a broker relays from an admin tool to a consumer, with their wire forms.

Owns ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO: the consumer's properties, subscriptions, the
ProcessQueueInfo of each queue it holds keyed by MessageQueue objects, per-topic ConsumeStatusInfo) and
ConsumeMessageDirectlyResult with the CMResult names (CONSUME_MESSAGE_DIRECTLY), GetConsumerStatusBody (the
offsets each consumer holds, GET_CONSUMER_STATUS_FROM_CLIENT / INVOKE_BROKER_TO_GET_CONSUMER_STATUS),
QueryConsumeTimeSpanBody (QUERY_CONSUME_TIME_SPAN) and QueryCorrectionOffsetBody (QUERY_CORRECTION_OFFSET).
The bodies that name
server, broker and clients exchange on every route lookup, registration and heartbeat are in
:mod:`rocketstore.remoting.bodies`, whose SubscriptionData and JSON value readers this module uses.

Pure: no I/O; imports remoting.fastjson, remoting.bodies and message.java_numbers only.  Values are frozen
dataclasses, safe to share between threads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from rocketstore.message.java_numbers import LONG_MAX, LONG_MIN
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import SubscriptionData, _bool, _int, _list, _obj
from rocketstore.remoting.fastjson import JsonBodyError

__all__ = [
    "CMResult",
    "ConsumeMessageDirectlyResult",
    "ConsumeStatusInfo",
    "ConsumerRunningInfo",
    "GetConsumerStatusBody",
    "ProcessQueueInfo",
    "QueueKey",
    "QueueTimeSpan",
    "decode_consume_time_span_body",
    "decode_correction_offset_body",
    "decode_reset_offset_body",
    "encode_consume_time_span_body",
    "encode_correction_offset_body",
    "encode_reset_offset_body",
]


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo:
    """One assigned queue as a consumer holds it (ProcessQueueInfo; timestamps in ms since the epoch)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    # Java's field names, "droped" spelt as on the wire
    _WIRE = (("commit_offset", "commitOffset"), ("cached_msg_min_offset", "cachedMsgMinOffset"),
             ("cached_msg_max_offset", "cachedMsgMaxOffset"), ("cached_msg_count", "cachedMsgCount"),
             ("cached_msg_size_mib", "cachedMsgSizeInMiB"), ("transaction_msg_min_offset", "transactionMsgMinOffset"),
             ("transaction_msg_max_offset", "transactionMsgMaxOffset"),
             ("transaction_msg_count", "transactionMsgCount"), ("locked", "locked"),
             ("try_unlock_times", "tryUnlockTimes"), ("last_lock_timestamp", "lastLockTimestamp"),
             ("dropped", "droped"), ("last_pull_timestamp", "lastPullTimestamp"),
             ("last_consume_timestamp", "lastConsumeTimestamp"))

    def to_json(self) -> dict[str, Any]:
        return {wire: getattr(self, name) for name, wire in self._WIRE}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ProcessQueueInfo:
        values: dict[str, Any] = {
            name: (_bool(obj.get(wire)) if name in ("locked", "dropped") else _int(obj.get(wire)))
            for name, wire in cls._WIRE if name != "last_lock_timestamp"}
        values["last_lock_timestamp"] = _lock_timestamp(obj.get("lastLockTimestamp"))
        return cls(**values)


def _lock_timestamp(value: Any) -> int:
    """lastLockTimestamp; 0 (unknown) for a whole number past a Java long, a number or a string of one:
    librocketmq (the C++ client, PyPI rocketmq 0.4.4) sends a never-set uint64 there, as a string of
    whatever the memory held (``"4189019907917050914"``, and past a long too).  4.9.3's fastjson refuses
    the whole running info for it ("parseLong error, field : lastLockTimestamp"): consumerStatus showed
    nothing of that consumer.  Anything else that is not a long is refused as in every other field."""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            number = int(value)
        except ValueError:
            return _int(value)  # (refused)
        if not LONG_MIN <= number <= LONG_MAX:
            return 0
    return _int(value)


def _float(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return 0.0


@dataclass(frozen=True, slots=True)
class ConsumeStatusInfo:
    """A consumer's rates for one topic over the last minute (ConsumeStatus; RTs in ms), and the
    messages it failed to consume in the last hour."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"consumeFailedMsgs": self.consume_failed_msgs, "consumeFailedTPS": self.consume_failed_tps,
                "consumeOKTPS": self.consume_ok_tps, "consumeRT": self.consume_rt, "pullRT": self.pull_rt,
                "pullTPS": self.pull_tps}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ConsumeStatusInfo:
        return cls(_float(obj.get("pullRT")), _float(obj.get("pullTPS")), _float(obj.get("consumeRT")),
                   _float(obj.get("consumeOKTPS")), _float(obj.get("consumeFailedTPS")),
                   _int(obj.get("consumeFailedMsgs")))


#: (topic, brokerName, queueId): a MessageQueue as the key of ConsumerRunningInfo.mqTable, in Java's order
QueueKey = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    """What a consumer reports about itself (ConsumerRunningInfo): its settings as Java Properties
    (strings), subscriptions, the queues it holds, per-topic rates and, when asked, a thread dump."""

    properties: dict[str, str]
    subscriptions: tuple[SubscriptionData, ...] = ()
    mq_table: dict[QueueKey, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatusInfo] = field(default_factory=dict)
    jstack: str | None = None

    PROP_NAMESERVER_ADDR: ClassVar[str] = "PROP_NAMESERVER_ADDR"
    PROP_THREADPOOL_CORE_SIZE: ClassVar[str] = "PROP_THREADPOOL_CORE_SIZE"
    PROP_CONSUME_ORDERLY: ClassVar[str] = "PROP_CONSUMEORDERLY"
    PROP_CONSUME_TYPE: ClassVar[str] = "PROP_CONSUME_TYPE"
    PROP_CLIENT_VERSION: ClassVar[str] = "PROP_CLIENT_VERSION"
    PROP_CONSUMER_START_TIMESTAMP: ClassVar[str] = "PROP_CONSUMER_START_TIMESTAMP"

    def encode(self) -> bytes:
        """fastjson's form: the mqTable keyed by MessageQueue objects (TreeMap order: topic, broker, queue)."""
        fields: dict[str, Any] = {}
        if self.jstack is not None:
            fields["jstack"] = self.jstack
        fields["properties"] = dict(sorted(self.properties.items()))
        fields["statusTable"] = {t: s.to_json() for t, s in sorted(self.status_table.items())}
        fields["subscriptionSet"] = [s.to_json() for s in sorted(self.subscriptions, key=lambda s: s.topic)]
        pairs = [({"brokerName": b, "queueId": q, "topic": t}, info.to_json())
                 for (t, b, q), info in sorted(self.mq_table.items())]
        return fastjson.dumps_object_keyed(fields, "mqTable", pairs)

    #: how librocketmq (the C++ client) starts its answer when it holds no queue: its hand-written mqTable
    #: loses the opening brace to the erase meant for the last entry's trailing comma
    _CPP_EMPTY_MQ_TABLE: ClassVar[bytes] = b'{"mqTable":},'

    @classmethod
    def decode(cls, body: bytes) -> ConsumerRunningInfo:
        if body.startswith(cls._CPP_EMPTY_MQ_TABLE):
            body = b'{"mqTable":{},' + body[len(cls._CPP_EMPTY_MQ_TABLE):]
        obj = _obj(fastjson.loads(body), "consumer running info")
        props = {str(k): str(v) for k, v in _obj(obj.get("properties") or {}, "properties").items()}
        subs = tuple(SubscriptionData.from_json(_obj(s, "subscriptionData"))
                     for s in _list(obj.get("subscriptionSet"), "subscriptionSet"))
        table: dict[QueueKey, ProcessQueueInfo] = {}
        for key, value in _obj(obj.get("mqTable") or {}, "mqTable").items():
            mq = dict(key) if isinstance(key, tuple) else None
            if mq is None:
                raise JsonBodyError(f"mqTable key is not a MessageQueue: {key!r}")
            table[(str(mq.get("topic", "")), str(mq.get("brokerName", "")), _int(mq.get("queueId")))] = \
                ProcessQueueInfo.from_json(_obj(value, "processQueueInfo"))
        status = {str(t): ConsumeStatusInfo.from_json(_obj(v, "consumeStatus"))
                  for t, v in _obj(obj.get("statusTable") or {}, "statusTable").items()}
        jstack = obj.get("jstack")
        return cls(props, subs, table, status, None if jstack is None else str(jstack))


class CMResult:
    """How a consumer handled a message it was handed directly (CMResult)."""

    SUCCESS = "CR_SUCCESS"
    LATER = "CR_LATER"
    ROLLBACK = "CR_ROLLBACK"
    COMMIT = "CR_COMMIT"
    THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    RETURN_NULL = "CR_RETURN_NULL"
    NAMES = (SUCCESS, LATER, ROLLBACK, COMMIT, THROW_EXCEPTION, RETURN_NULL)


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResult:
    consume_result: str | None
    order: bool = False
    auto_commit: bool = True
    remark: str | None = None
    spent_time_ms: int = 0

    def encode(self) -> bytes:
        obj: dict[str, Any] = {"autoCommit": self.auto_commit}
        if self.consume_result is not None:
            obj["consumeResult"] = self.consume_result
        obj["order"] = self.order
        if self.remark is not None:
            obj["remark"] = self.remark
        obj["spentTimeMills"] = self.spent_time_ms
        return fastjson.dumps(obj)

    @classmethod
    def decode(cls, body: bytes) -> ConsumeMessageDirectlyResult:
        obj = _obj(fastjson.loads(body), "consume message directly result")
        result = obj.get("consumeResult")
        remark = obj.get("remark")
        return cls(None if result is None else str(result), _bool(obj.get("order")),
                   _bool(obj.get("autoCommit"), True), None if remark is None else str(remark),
                   _int(obj.get("spentTimeMills")))


def encode_reset_offset_body(table: Mapping[QueueKey, int], *, for_c: bool = False) -> bytes:
    """ResetOffsetBody (``{"offsetTable":{{MessageQueue}:offset,...}}``, fastjson's Map<MessageQueue, Long>)
    or, *for_c*, ResetOffsetBodyForC (``{"offsetTable":[{"brokerName","offset","queueId","topic"},...]}``,
    the form rocketmq-client-cpp decodes)."""
    ordered = sorted(table.items())
    if for_c:
        return fastjson.dumps({"offsetTable": [{"brokerName": b, "offset": o, "queueId": q, "topic": t}
                                               for (t, b, q), o in ordered]})
    return fastjson.dumps_object_keyed({}, "offsetTable", [({"brokerName": b, "queueId": q, "topic": t}, o)
                                                           for (t, b, q), o in ordered])


def decode_reset_offset_body(body: bytes) -> dict[QueueKey, int]:
    """Either form :func:`encode_reset_offset_body` writes."""
    table = _obj(fastjson.loads(body), "reset offset body").get("offsetTable") or {}
    found: dict[QueueKey, int] = {}
    if isinstance(table, list):
        for entry in table:
            mq = _obj(entry, "offsetTable entry")
            found[(str(mq.get("topic", "")), str(mq.get("brokerName", "")), _int(mq.get("queueId")))] = \
                _int(mq.get("offset"))
        return found
    for key, offset in _obj(table, "offsetTable").items():
        if not isinstance(key, tuple):
            raise JsonBodyError(f"offsetTable key is not a MessageQueue: {key!r}")
        mq = dict(key)
        found[(str(mq.get("topic", "")), str(mq.get("brokerName", "")), _int(mq.get("queueId")))] = _int(offset)
    return found


def _queue_key(key: Any, what: str) -> QueueKey:
    """A fastjson MessageQueue key (a tuple of (name, value) pairs from fastjson.loads) as a QueueKey."""
    if not isinstance(key, tuple):
        raise JsonBodyError(f"{what} key is not a MessageQueue: {key!r}")
    mq = dict(key)
    return str(mq.get("topic", "")), str(mq.get("brokerName", "")), _int(mq.get("queueId"))


def _queue_json(key: QueueKey) -> dict[str, Any]:
    topic, broker_name, queue_id = key
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


def _offsets_by_queue(table: Mapping[QueueKey, int]) -> str:
    """fastjson's text of a ``Map<MessageQueue, Long>``: object keys (not valid JSON, what Java reads)."""
    entries = (json.dumps(_queue_json(key), ensure_ascii=False, separators=(",", ":")) + ":" + str(int(offset))
               for key, offset in sorted(table.items()))
    return "{" + ",".join(entries) + "}"


def _read_offsets_by_queue(value: Any, what: str) -> dict[QueueKey, int]:
    return {_queue_key(key, what): _int(offset) for key, offset in _obj(value, what).items()}


@dataclass(frozen=True, slots=True)
class GetConsumerStatusBody:
    """A consumer's offsets of one topic (``messageQueueTable``, what it answers GET_CONSUMER_STATUS_FROM_CLIENT
    with) or, in the broker's answer to INVOKE_BROKER_TO_GET_CONSUMER_STATUS, those of every consumer that
    answered (``consumerTable``: client id -> its table)."""

    message_queue_table: dict[QueueKey, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[QueueKey, int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        consumers = ",".join(json.dumps(client_id, ensure_ascii=False) + ":" + _offsets_by_queue(table)
                             for client_id, table in sorted(self.consumer_table.items()))
        text = ('{"consumerTable":{' + consumers + '},"messageQueueTable":'
                + _offsets_by_queue(self.message_queue_table) + "}")
        return fastjson.java_escapes(text).encode("utf-8", "replace")  # (fastjson's escapes; '?' as in dumps)

    @classmethod
    def decode(cls, body: bytes) -> GetConsumerStatusBody:
        obj = _obj(fastjson.loads(body), "consumer status body")
        consumers = {str(client_id): _read_offsets_by_queue(table, "consumerTable")
                     for client_id, table in _obj(obj.get("consumerTable"), "consumerTable").items()}
        return cls(_read_offsets_by_queue(obj.get("messageQueueTable"), "messageQueueTable"), consumers)


def _java_date(ms: int) -> str:
    """UtilAll.formatDate(new Date(ms), "yyyy-MM-dd#HH:mm:ss:SSS") in local time."""
    seconds, millis = divmod(ms, 1000)
    try:
        return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d#%H:%M:%S") + f":{millis:03d}"
    except (OverflowError, OSError, ValueError):  # beyond what the platform's clock functions take
        return str(ms)


@dataclass(frozen=True, slots=True)
class QueueTimeSpan:
    """One queue of QUERY_CONSUME_TIME_SPAN (QueueTimeSpan; ms since the epoch, -1 where there is no such
    message): store times of its oldest and newest message and of the last message the group consumed, and
    how long the next one has waited (0 when the group is at the end)."""

    queue: QueueKey
    min_timestamp_ms: int
    max_timestamp_ms: int
    consume_timestamp_ms: int
    delay_time_ms: int

    def to_json(self) -> dict[str, Any]:
        # fastjson writes every getter, so the three *Str renderings of the times go on the wire too
        return {"consumeTimeStamp": self.consume_timestamp_ms,
                "consumeTimeStampStr": _java_date(self.consume_timestamp_ms), "delayTime": self.delay_time_ms,
                "maxTimeStamp": self.max_timestamp_ms, "maxTimeStampStr": _java_date(self.max_timestamp_ms),
                "messageQueue": _queue_json(self.queue), "minTimeStamp": self.min_timestamp_ms,
                "minTimeStampStr": _java_date(self.min_timestamp_ms)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueTimeSpan:
        mq = _obj(obj.get("messageQueue") or {}, "messageQueue")
        key = (str(mq.get("topic", "")), str(mq.get("brokerName", "")), _int(mq.get("queueId")))
        return cls(key, _int(obj.get("minTimeStamp")), _int(obj.get("maxTimeStamp")),
                   _int(obj.get("consumeTimeStamp")), _int(obj.get("delayTime")))


def encode_consume_time_span_body(spans: list[QueueTimeSpan]) -> bytes:
    """QueryConsumeTimeSpanBody: ``{"consumeTimeSpanSet":[QueueTimeSpan,...]}``."""
    return fastjson.dumps({"consumeTimeSpanSet": [span.to_json() for span in spans]})


def decode_consume_time_span_body(body: bytes) -> list[QueueTimeSpan]:
    obj = _obj(fastjson.loads(body), "consume time span body")
    return [QueueTimeSpan.from_json(_obj(span, "queueTimeSpan"))
            for span in _list(obj.get("consumeTimeSpanSet"), "consumeTimeSpanSet")]


def encode_correction_offset_body(offsets: Mapping[int, int]) -> bytes:
    """QueryCorrectionOffsetBody: ``{"correctionOffsets":{queueId:offset,...}}`` (keys quoted, see fastjson)."""
    return fastjson.dumps({"correctionOffsets": dict(sorted(offsets.items()))})


def decode_correction_offset_body(body: bytes) -> dict[int, int]:
    obj = _obj(fastjson.loads(body), "correction offset body")
    table = _obj(obj.get("correctionOffsets"), "correctionOffsets")
    try:
        return {int(queue_id): _int(offset) for queue_id, offset in table.items()}
    except ValueError as exc:
        raise JsonBodyError(f"correctionOffsets key is not a queue id: {exc}") from exc
