"""The JSON bodies that name server, broker and clients exchange, as values with their wire forms.

Owns TopicConfig (topics.json entries and RegisterBrokerBody contents), DataVersion, RegisterBrokerBody
(plain JSON and the deflate-compressed form), QueueData / BrokerData / TopicRouteData, SubscriptionData and
HeartbeatData (accepting enum names or C++'s ordinals, numbers or strings), and the perm bits.  The bodies
of the calls a broker relays to a consumer (running info, consume directly) are
:mod:`rocketstore.remoting.consumer_bodies`, which builds on this module.

Pure: no I/O; imports errors, message.hashing, message.java_numbers, message.java_text, remoting.fastjson
and the frame limit of remoting.frame_decoder only (never consumer_bodies).  Values
are frozen dataclasses, safe to share between threads.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketstore.errors import ProtocolError
from rocketstore.message.hashing import java_string_hash
from rocketstore.message.java_numbers import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from rocketstore.message.java_text import java_trim
from rocketstore.remoting import fastjson
from rocketstore.remoting.frame_decoder import MAX_FRAME_BYTES

__all__ = [
    "MASTER_ID",
    "BrokerData",
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "DataVersion",
    "HeartbeatData",
    "MessageModel",
    "Perm",
    "QueueData",
    "RegisterBrokerBody",
    "SubscriptionData",
    "TopicConfig",
    "TopicRouteData",
    "build_subscription",
    "encode_broker_data",
    "topic_list_body",
]

MASTER_ID = 0


class Perm:
    """``PermName`` bits."""

    PRIORITY = 8
    READ = 4
    WRITE = 2
    INHERIT = 1

    @staticmethod
    def readable(perm: int) -> bool:
        return bool(perm & Perm.READ)

    @staticmethod
    def writeable(perm: int) -> bool:
        return bool(perm & Perm.WRITE)

    @staticmethod
    def inherited(perm: int) -> bool:
        return bool(perm & Perm.INHERIT)

    @staticmethod
    def to_string(perm: int) -> str:
        """PermName.perm2String: ``RWX``, ``-`` for a bit not set."""
        return ("R" if perm & Perm.READ else "-") + ("W" if perm & Perm.WRITE else "-") + (
            "X" if perm & Perm.INHERIT else "-")


def _int(value: Any, default: int = 0, *, java_int: bool = False) -> int:
    """A JSON int that some clients send as a string.  ProtocolError for anything else, for an infinite
    float (JSON's 1e400) and for a value past the Java field's range: a long, or an int with *java_int*
    (4.9.3's fastjson refuses both; a queue count of 10**21 would otherwise reach every route)."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return int(value)
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"{value!r:.80} is not an integer") from exc
    low, high = (INT_MIN, INT_MAX) if java_int else (LONG_MIN, LONG_MAX)
    if not low <= number <= high:
        raise ProtocolError(f"{value!r:.80} is out of range for a Java {'int' if java_int else 'long'}")
    return number


def _bool(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.lower() == "true"
    return bool(value)


def _obj(value: Any, what: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"{what} is not a JSON array")
    return value


# --- topic config and data version ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic's queues and permissions (``TopicConfig``; Java's defaults: 16/16, perm 6)."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = Perm.READ | Perm.WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"order": self.order, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicFilterType": self.topic_filter_type, "topicName": self.topic_name,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], name: str | None = None) -> TopicConfig:
        topic = obj.get("topicName") or name
        if not topic:
            raise ProtocolError("topic config without topicName")
        return cls(str(topic), _int(obj.get("readQueueNums"), 16, java_int=True),
                   _int(obj.get("writeQueueNums"), 16, java_int=True),
                   _int(obj.get("perm"), 6, java_int=True), str(obj.get("topicFilterType") or "SINGLE_TAG"),
                   _int(obj.get("topicSysFlag", obj.get("topicSynFlag")), 0, java_int=True),
                   _bool(obj.get("order")))

    def encode_text(self) -> str:
        """``TopicConfig.encode()``: the compressed-registration form."""
        return (f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} "
                f"{self.topic_filter_type}")

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) < 5:
            raise ProtocolError(f"topic config text {text[:80]!r} has fewer than 5 fields")
        return cls(parts[0], _int(parts[1], java_int=True), _int(parts[2], java_int=True),
                   _int(parts[3], java_int=True), parts[4])

    def replace(self, **changes: Any) -> TopicConfig:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class DataVersion:
    timestamp_ms: int = 0
    counter: int = 0

    def to_json(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp_ms}

    @classmethod
    def from_json(cls, obj: Any) -> DataVersion:
        obj = _obj(obj, "dataVersion")
        return cls(_int(obj.get("timestamp")), _int(obj.get("counter")))

    def next(self, now_ms: int) -> DataVersion:
        return DataVersion(now_ms, self.counter + 1)


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody:
    """What a broker registers: its topic configs, data version and filter servers."""

    topic_configs: dict[str, TopicConfig]
    data_version: DataVersion
    filter_server_list: tuple[str, ...] = ()

    def wrapper_json(self) -> dict[str, Any]:
        return {"dataVersion": self.data_version.to_json(),
                "topicConfigTable": {name: tc.to_json() for name, tc in self.topic_configs.items()}}

    def encode(self) -> bytes:
        return fastjson.dumps({"filterServerList": list(self.filter_server_list),
                               "topicConfigSerializeWrapper": self.wrapper_json()})

    def encode_compressed(self) -> bytes:
        out = bytearray()
        version = json.dumps(self.data_version.to_json(), separators=(",", ":")).encode()
        out += struct.pack(">i", len(version)) + version
        out += struct.pack(">i", len(self.topic_configs))
        for tc in self.topic_configs.values():
            text = tc.encode_text().encode()
            out += struct.pack(">i", len(text)) + text
        filters = json.dumps(list(self.filter_server_list)).encode()
        out += struct.pack(">i", len(filters)) + filters
        return zlib.compress(bytes(out), 9)

    @classmethod
    def decode(cls, body: bytes, *, compressed: bool = False, version: int = 399) -> RegisterBrokerBody:
        if compressed:
            return cls._decode_compressed(body)
        if not body:
            return cls({}, DataVersion())
        obj = _obj(fastjson.loads(body), "register body")
        if version >= 37 and "topicConfigSerializeWrapper" in obj:
            wrapper = _obj(obj.get("topicConfigSerializeWrapper"), "topicConfigSerializeWrapper")
            filters = tuple(str(f) for f in _list(obj.get("filterServerList"), "filterServerList"))
        else:
            wrapper, filters = obj, ()
        table = _obj(wrapper.get("topicConfigTable"), "topicConfigTable")
        configs = {str(name): TopicConfig.from_json(_obj(tc, "topic config"), str(name)) for name, tc in table.items()}
        return cls(configs, DataVersion.from_json(wrapper.get("dataVersion")), filters)

    @classmethod
    def decode_without_topics(cls, body: bytes, *, compressed: bool = False,
                              version: int = 399) -> RegisterBrokerBody | None:
        """The body's data version and filter servers, its topic configs left unread (an empty table), or
        None when the body is not laid out as brokers write it (then :meth:`decode` it whole).

        Why: a broker re-registers its whole table every 30 s, and the name server takes the topics only
        when the data version changed (4.9.3's isBrokerTopicConfigChanged); reading 10,000 topics it then
        drops cost ~100 ms of CPU per registration.  Plain bodies: fastjson writes the keys sorted, so
        ``filterServerList`` and the wrapper's ``dataVersion`` come before ``topicConfigTable`` and only
        that prefix is parsed.  Compressed bodies: the topic records are stepped over by their lengths; one
        that does not inflate, or inflates past MAX_INFLATED_REGISTER_BYTES, is the ProtocolError decode
        raises (not None: decoding it whole would only inflate it again)."""
        if not body:
            return None
        raw = _inflate_register_body(body) if compressed else b""  # a bomb or non-deflate: the same error as decode
        try:
            if compressed:
                return cls._peek_compressed(raw)
            return _peek_plain(body, version)
        except (ProtocolError, ValueError, RecursionError, struct.error):
            return None

    @classmethod
    def _peek_compressed(cls, raw: bytes) -> RegisterBrokerBody | None:
        """The slim body of an already inflated compressed registration *raw*, or None (see above)."""
        unpack = _BE_INT.unpack_from
        (n,) = unpack(raw, 0)
        pos = 4 + n
        if n < 0 or pos + 4 > len(raw):
            return None
        data_version = DataVersion.from_json(fastjson.loads(raw[4:pos]))
        (count,) = unpack(raw, pos)
        pos += 4
        for _ in range(max(0, count)):
            (n,) = unpack(raw, pos)
            pos += 4 + n
            if n < 0 or pos > len(raw):
                return None
        filters: tuple[str, ...] = ()
        if pos < len(raw):
            (n,) = unpack(raw, pos)
            if n < 0 or pos + 4 + n != len(raw):
                return None
            filters = tuple(str(f) for f in _list(fastjson.loads(raw[pos + 4:]), "filterServerList"))
        return cls({}, data_version, filters)

    @classmethod
    def _decode_compressed(cls, body: bytes) -> RegisterBrokerBody:
        raw = _inflate_register_body(body)
        pos = 0

        def chunk() -> bytes:
            nonlocal pos
            if pos + 4 > len(raw):
                raise ProtocolError("compressed register body truncated")
            (n,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            if n < 0 or pos + n > len(raw):
                raise ProtocolError("compressed register body length out of range")
            data = raw[pos : pos + n]
            pos += n
            return data

        version = DataVersion.from_json(fastjson.loads(chunk()))
        if pos + 4 > len(raw):
            raise ProtocolError("compressed register body truncated")
        (count,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        configs = {}
        for _ in range(max(0, count)):
            tc = TopicConfig.decode_text(chunk().decode("utf-8", "replace"))
            configs[tc.topic_name] = tc
        filters: tuple[str, ...] = ()
        if pos < len(raw):
            filters = tuple(str(f) for f in _list(fastjson.loads(chunk()), "filterServerList"))
        return cls(configs, version, filters)


_BE_INT = struct.Struct(">i")
#: the most a compressed register body may inflate to: 4 frames' worth (64 MiB).  A topic's text record
#: (``name 8 8 6 SINGLE_TAG 0 false`` and its length) is under half its JSON entry in a plain body, so this
#: holds every table 10 plain registrations' frames could carry (~400,000 topics of 127-character names,
#: ~1.5 million short ones), far past any broker; a bigger inflation is a zip bomb (a 16 MiB frame of zeros
#: inflates to ~16 GiB), refused before it takes the name server's memory.
MAX_INFLATED_REGISTER_BYTES = 4 * MAX_FRAME_BYTES
_JSON_VALUE = json.JSONDecoder(strict=False)
#: how much of a plain register body is read for its data version: the filter server list and the data
#: version come first and are a few hundred bytes
_PEEK_PREFIX_BYTES = 64 * 1024
_WS = re.compile(r"[ \t\r\n]*")


def _inflate_register_body(body: bytes) -> bytes:
    """The inflated bytes of a compressed register body; ProtocolError when it is not a whole deflate stream
    or would inflate to MAX_INFLATED_REGISTER_BYTES or more (checked as it inflates, never more held).  Bytes after
    the stream's end are ignored, as zlib.decompress and 4.9.3's InflaterInputStream do."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(body, MAX_INFLATED_REGISTER_BYTES)
        if inflater.unconsumed_tail or len(raw) >= MAX_INFLATED_REGISTER_BYTES:
            raise ProtocolError(f"compressed register body inflates past {MAX_INFLATED_REGISTER_BYTES} bytes")
        raw += inflater.flush()
    except zlib.error as exc:
        raise ProtocolError(f"compressed register body does not inflate: {exc}") from exc
    if not inflater.eof:
        raise ProtocolError("compressed register body does not inflate: incomplete or truncated stream")
    return raw


def _peek_plain(body: bytes, version: int) -> RegisterBrokerBody | None:
    """RegisterBrokerBody.decode_without_topics of a plain body: the sorted prefix
    ``{"filterServerList":[...],"topicConfigSerializeWrapper":{"dataVersion":{...},`` (version >= 37) or
    ``{"dataVersion":{...},`` (older brokers send the wrapper alone), else None."""
    text = codecs.getincrementaldecoder("utf-8")().decode(body[:_PEEK_PREFIX_BYTES])
    pos = 0

    def token(expected: str) -> bool:
        nonlocal pos
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith(expected, pos):
            pos += len(expected)
            return True
        return False

    def value() -> Any:
        nonlocal pos
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        obj, pos = _JSON_VALUE.raw_decode(text, pos)
        return obj

    if not token("{"):
        return None
    filters: tuple[str, ...] = ()
    if version >= 37:
        if not (token('"filterServerList"') and token(":")):
            return None
        filters = tuple(str(f) for f in _list(value(), "filterServerList"))
        if not (token(",") and token('"topicConfigSerializeWrapper"') and token(":") and token("{")):
            return None
    if not (token('"dataVersion"') and token(":")):
        return None
    data_version = DataVersion.from_json(value())
    if not (token(",") and token('"topicConfigTable"') and token(":")):
        return None
    return RegisterBrokerBody({}, data_version, filters)


# --- routes -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueData:
        return cls(str(obj.get("brokerName", "")), _int(obj.get("readQueueNums")), _int(obj.get("writeQueueNums")),
                   _int(obj.get("perm")), _int(obj.get("topicSysFlag", obj.get("topicSynFlag")), 0))


@dataclass(frozen=True, slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {"brokerAddrs": dict(sorted(self.broker_addrs.items())), "brokerName": self.broker_name,
                "cluster": self.cluster}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> BrokerData:
        addrs = {_int(k): str(v) for k, v in _obj(obj.get("brokerAddrs"), "brokerAddrs").items()}
        return cls(str(obj.get("cluster", "")), str(obj.get("brokerName", "")), addrs)

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def any_addr(self) -> str | None:
        if MASTER_ID in self.broker_addrs:
            return self.broker_addrs[MASTER_ID]
        return next(iter(self.broker_addrs.values()), None)


def encode_broker_data(bd: BrokerData) -> str:
    """One BrokerData as fastjson writes it (text)."""
    # fastjson writes Map<Long, String> keys bare: {0:"ip:port"}; C++ (allowNumericKeys), ali-ons and Java
    # read that, and it is what a Java name server sends.
    addrs = ",".join(f"{k}:{json.dumps(v)}" for k, v in sorted(bd.broker_addrs.items()))
    return ('{"brokerAddrs":{' + addrs + '},"brokerName":' + json.dumps(bd.broker_name, ensure_ascii=False)
            + ',"cluster":' + json.dumps(bd.cluster, ensure_ascii=False) + "}")


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict, hash=False)

    def encode(self) -> bytes:
        """fastjson's form: keys sorted, compact, bare integer keys in brokerAddrs, nulls left out."""
        parts = ['"brokerDatas":[' + ",".join(encode_broker_data(bd) for bd in self.broker_datas) + "]",
                 '"filterServerTable":' + json.dumps(self.filter_server_table, separators=(",", ":"))]
        if self.order_topic_conf is not None:
            parts.append('"orderTopicConf":' + json.dumps(self.order_topic_conf, ensure_ascii=False))
        parts.append('"queueDatas":[' + ",".join(
            json.dumps(qd.to_json(), separators=(",", ":"), ensure_ascii=False) for qd in self.queue_datas) + "]")
        # (fastjson's escapes; a lone surrogate as '?', as fastjson.dumps writes it)
        return fastjson.java_escapes("{" + ",".join(parts) + "}").encode("utf-8", "replace")

    @classmethod
    def decode(cls, body: bytes) -> TopicRouteData:
        obj = _obj(fastjson.loads(body), "route")
        qds = tuple(QueueData.from_json(_obj(q, "queueData")) for q in _list(obj.get("queueDatas"), "queueDatas"))
        bds = tuple(BrokerData.from_json(_obj(b, "brokerData")) for b in _list(obj.get("brokerDatas"), "brokerDatas"))
        conf = obj.get("orderTopicConf")
        fst = {str(k): [str(x) for x in _list(v, "filter servers")]
               for k, v in _obj(obj.get("filterServerTable"), "filterServerTable").items()}
        return cls(qds, bds, None if conf is None else str(conf), fst)

    def broker(self, broker_name: str) -> BrokerData | None:
        for bd in self.broker_datas:
            if bd.broker_name == broker_name:
                return bd
        return None


# --- subscriptions and heartbeats ------------------------------------------------------------------------


class ConsumeType:
    NAMES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY")
    ACTIVELY = "CONSUME_ACTIVELY"
    PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel:
    NAMES = ("BROADCASTING", "CLUSTERING")
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere:
    # C++ ordinals (rocketmq-client-cpp ConsumeFromWhere)
    NAMES = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
             "CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET",
             "CONSUME_FROM_TIMESTAMP")
    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"


def _enum_name(value: Any, names: tuple[str, ...], default: str) -> str:
    """An enum sent as its name (Java, ali-ons) or its ordinal (C++), as a name."""
    if value is None or value == "":
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return names[value] if 0 <= value < len(names) else default
    text = str(value)
    if text.isdecimal():  # not isdigit(): int() refuses a superscript digit
        index = int(text)
        return names[index] if index < len(names) else default
    return text


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = "*"
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    sub_version: int = 0
    class_filter_mode: bool = False
    expression_type: str = "TAG"

    @property
    def matches_all(self) -> bool:
        return java_trim(self.sub_string) in ("", "*") and self.expression_type == "TAG"

    @property
    def names_no_tag(self) -> bool:
        """A TAG expression of separators only (``||``, `` || ``): not everything, yet no tag (4.9.3's
        subscribe refuses ``||``; a broker matches no tag code with it)."""
        return self.expression_type == "TAG" and not self.matches_all and not self.tags_set

    def tag_codes(self) -> frozenset[int]:
        """The tags' hash codes a TAG subscription passes (a consume queue entry's tagsCode): rebuilt from
        the tag strings, since the C++ clients' codeSet holds ``atoi(tag)``; the codeSet as sent when there
        are no tag strings."""
        if self.tags_set:
            return frozenset(java_string_hash(t) for t in self.tags_set)
        return frozenset(self.code_set)

    def to_json(self) -> dict[str, Any]:
        return {"classFilterMode": self.class_filter_mode, "codeSet": list(self.code_set),
                "expressionType": self.expression_type, "subString": self.sub_string,
                "subVersion": self.sub_version, "tagsSet": list(self.tags_set), "topic": self.topic}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SubscriptionData:
        return cls(str(obj.get("topic", "")), str(obj.get("subString") or "*"),
                   tuple(str(t) for t in _list(obj.get("tagsSet"), "tagsSet")),
                   tuple(_int(c, java_int=True) for c in _list(obj.get("codeSet"), "codeSet")),
                   _int(obj.get("subVersion")), _bool(obj.get("classFilterMode")),
                   str(obj.get("expressionType") or "TAG"))


def build_subscription(topic: str, expression: str | None, sub_version: int = 0,
                       expression_type: str | None = None) -> SubscriptionData:
    """``FilterAPI.buildSubscriptionData``: ``*``/empty is everything, else tags split on ``||``."""
    expression_type = expression_type or "TAG"
    if expression_type != "TAG":
        text = (expression or "").strip()
        return SubscriptionData(topic, text, sub_version=sub_version, expression_type=expression_type)
    # String.trim, not str.strip: a tag keeps U+00A0/U+3000 at its ends and loses \x01 (4.9.3's tags)
    text = java_trim(expression or "")
    if not text or text == "*":
        return SubscriptionData(topic, "*", sub_version=sub_version)
    tags = tuple(dict.fromkeys(t for t in map(java_trim, text.split("||")) if t))
    return SubscriptionData(topic, text, tags, tuple(java_string_hash(t) for t in tags), sub_version)


@dataclass(frozen=True, slots=True)
class ConsumerData:
    group_name: str
    consume_type: str = ConsumeType.PASSIVELY
    message_model: str = MessageModel.CLUSTERING
    consume_from_where: str = ConsumeFromWhere.LAST_OFFSET
    subscriptions: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"consumeFromWhere": self.consume_from_where, "consumeType": self.consume_type,
                "groupName": self.group_name, "messageModel": self.message_model,
                "subscriptionDataSet": [s.to_json() for s in self.subscriptions], "unitMode": self.unit_mode}


@dataclass(frozen=True, slots=True)
class HeartbeatData:
    client_id: str
    producer_groups: tuple[str, ...] = ()
    consumers: tuple[ConsumerData, ...] = ()

    def encode(self) -> bytes:
        return fastjson.dumps({"clientID": self.client_id,
                               "consumerDataSet": [c.to_json() for c in self.consumers],
                               "producerDataSet": [{"groupName": g} for g in self.producer_groups]})

    @classmethod
    def decode(cls, body: bytes) -> HeartbeatData:
        obj = _obj(fastjson.loads(body) if body else {}, "heartbeat")
        producers = tuple(str(_obj(p, "producerData").get("groupName", ""))
                          for p in _list(obj.get("producerDataSet"), "producerDataSet"))
        consumers = []
        for raw in _list(obj.get("consumerDataSet"), "consumerDataSet"):
            c = _obj(raw, "consumerData")
            subs = tuple(SubscriptionData.from_json(_obj(s, "subscriptionData"))
                         for s in _list(c.get("subscriptionDataSet"), "subscriptionDataSet"))
            consumers.append(ConsumerData(
                str(c.get("groupName", "")),
                _enum_name(c.get("consumeType"), ConsumeType.NAMES, ConsumeType.PASSIVELY),
                _enum_name(c.get("messageModel"), MessageModel.NAMES, MessageModel.CLUSTERING),
                _enum_name(c.get("consumeFromWhere"), ConsumeFromWhere.NAMES, ConsumeFromWhere.LAST_OFFSET),
                subs, _bool(c.get("unitMode"))))
        return cls(str(obj.get("clientID", "")), tuple(g for g in producers if g), tuple(consumers))


def topic_list_body(topics: Iterable[str]) -> bytes:
    return fastjson.dumps({"topicList": sorted(topics)})
