"""The JSON bodies of the calls a broker relays from an admin tool to a consumer, with their wire forms.

Owns ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO: the consumer's properties, subscriptions, the
ProcessQueueInfo of each queue it holds keyed by MessageQueue objects, per-topic ConsumeStatusInfo) and
ConsumeMessageDirectlyResult with the CMResult names (CONSUME_MESSAGE_DIRECTLY).  The bodies that name
server, broker and clients exchange on every route lookup, registration and heartbeat are in
:mod:`rocketstore.remoting.bodies`, whose SubscriptionData and JSON value readers this module uses.

Pure: no I/O; imports remoting.fastjson and remoting.bodies only.  Values are frozen dataclasses,
safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import SubscriptionData, _bool, _int, _list, _obj
from rocketstore.remoting.fastjson import JsonBodyError

__all__ = [
    "CMResult",
    "ConsumeMessageDirectlyResult",
    "ConsumeStatusInfo",
    "ConsumerRunningInfo",
    "ProcessQueueInfo",
    "QueueKey",
    "decode_reset_offset_body",
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
            for name, wire in cls._WIRE}
        return cls(**values)


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

    @classmethod
    def decode(cls, body: bytes) -> ConsumerRunningInfo:
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
