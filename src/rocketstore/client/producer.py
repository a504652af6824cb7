"""A minimal async producer: route from the name servers, round-robin over the publish queues, send
(SEND_MESSAGE_V2) and send batches (SEND_BATCH_MESSAGE), with retries on another queue for retriable errors
(none for a send to a chosen ``queue_id``, which may be any id the broker takes, as Java's send(msg, mq));
oneway sends (no answer, no retry) and orderly sends (the queue chosen from a sharding key, never changed;
oneway too, ``send_oneway_orderly``).  ``service_state`` / ``is_running`` tell where the producer is in its
life (:class:`~rocketstore.client.errors.ServiceState`).

    async with Producer("127.0.0.1:9876", "my-group") as producer:
        result = await producer.send("TopicA", b"hello", tags="TagA", keys="order-1")
        await producer.send_oneway("TopicA", b"fire and forget")
        await producer.send_orderly("TopicA", b"step 1", "order-1")   # same key, same queue, in order

Connections are opened on demand and reopened after a broker restart (the pool drops closed ones), so a
producer outlives a broker that goes away and comes back on the same address: sends fail meanwhile
(RemotingError / NoRouteError) and succeed again afterwards without any call to reconnect.  As in 4.9.3,
``timeout_s`` bounds a whole send, its route look-up and retries included (spent before the
request goes out: SendCallTimeoutError, a RequestTimeoutError, "... call timeout", nothing sent), and a body
of 4 KiB or more goes out zlib-compressed with sysFlag COMPRESSED (``compress_msg_body_over_howmuch``; never a
batch's).

Errors of a send, as 4.9.3's DefaultMQProducerImpl throws them: what the client refuses before sending
(MessageIllegalError, ClientError) and a topic without route (NoRouteError) at once; a broker's answer that
is not among the codes a send retries (4.9.3's retryResponseCodes: SYSTEM_ERROR, SERVICE_NOT_AVAILABLE,
NO_PERMISSION, TOPIC_NOT_EXIST, NO_BUYER_ID, NOT_IN_CURRENT_UNIT; so SYSTEM_BUSY and the flow-control
answers are not retried) as its
BrokerError at once.  When every try of a plain send, batch or oneway send (``retry_times`` + 1 of them; a
oneway one try) fails on a connection, a time-out or a retried code, the send raises
:class:`~rocketstore.client.errors.SendFailedError` (Java's MQClientException "Send [n] times, still failed,
cost [x]ms, Topic: t, BrokersSent: [...]"), which is also of the last error's class (``except
ServiceNotAvailableError`` / ``except RemotingError`` go on catching it) and has it as ``__cause__`` and
``last_error``.  A send to a chosen ``queue_id`` and an orderly send (Java's send(msg, mq) and
send(msg, selector, arg)) raise their one error as it is.  ``mq_client_api_timeout_s`` (Java's
mqClientApiTimeout, 3 s) bounds each route look-up from the name servers, each heartbeat and each
unregistration, as 4.9.3's MQClientInstance bounds them; a send's look-up still counts against its own
timeout.

Each message gets a client-generated UNIQ_KEY (RocketMQ's MessageClientIDSetter layout: IP, pid, a random
instance word, ms since the start of the month, a counter), which is ``SendResult.msg_id``; the broker's
offset message id is ``offset_msg_id``.  Loop-bound: a send from another event loop than the one its
connections were opened on (another thread's, or a forked child's) raises LoopBoundError at once, never
retried (:mod:`rocketstore.client.blocking_producer` is for code without a loop).

Per-message client CPU is part of every round trip, so the send paths avoid per-message Python work where
the bytes allow: a batch's keys come from one struct pack and hex of their counters and the usual batch (one
tags value, flag and body length, no keys or user properties) is one join of the bodies and keys between
the parts every entry shares, without BatchEntry objects or a pack per entry; the request's
frame comes from a per-(topic, queue) JsonRequestTemplate with only the born timestamp, the properties and
the opaque filled in per send (Connection.request_encoded numbers it); the route, publish queues, master
addresses and the pool's connection are looked up without a coroutine while they stay valid.

With ``credentials`` (ACL) every request is signed by its connection, which needs the request's extFields:
sends then build a RemotingCommand (the path bodies of 16 KiB and more always take), never a template's frame.

Heartbeats, as 4.9.3's MQClientInstance sends them for a DefaultMQProducer: HEART_BEAT with the client id
and in ``producerDataSet`` the group and CLIENT_INNER_PRODUCER (the inner producer every MQClientInstance
has) to every master of the routes the producer has read.  A background task, started by ``start()``
(``async with`` starts) or else by the first route a send reads, heartbeats the masters of the auto-create
topic's route at once, a master new in a route as soon as it shows, and every
``heartbeat_interval_s`` (Java's heartbeatBrokerInterval, 30 s) all of them (a master that no route of its
topics names any more is forgotten then, as cleanOfflineBroker forgets it).  The same task re-reads the
routes of the topics seen every ``route_refresh_interval_s`` (Java's pollNameServerInterval, 30 s), on its
own schedule: while it runs, a send uses the route it has however old and asks the name servers only for a
topic it has none of, so one that hangs holds up no send, and a route changed reaches the sends with the
next re-read whatever the heartbeat interval.
``close()`` sends UNREGISTER_CLIENT with the group, then with CLIENT_INNER_PRODUCER, to each master
heartbeated.  So the brokers' producer tables list the producer under both groups, as they list a Java
client (GET_PRODUCER_CONNECTION_LIST, ``rocketstore producer connections``).  The heartbeats go on the
connection the sends use and never hold a send up.  A broker may call back on that connection: a reply
pushed for a RequestProducer of the same client id is handed over, a transaction check is dropped (a plain
producer has no check listener, as in Java).

With ``enable_trace`` each send, orderly send and batch is wrapped by the trace's ``pub`` (a Pub record once
its result is known, see :mod:`rocketstore.client.trace_producer`); without it a send path tests
``self.trace`` once and nothing more.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import socket
import struct
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol, Self

from rocketstore.client import group_requests
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import (
    BrokerError,
    ClientError,
    MessageIllegalError,
    NoRouteError,
    SendCallTimeoutError,
    ServiceState,
    broker_error_for,
    logged,
    send_failed,
    state_not_ok,
    state_of,
)
from rocketstore.client.process_queue import wait_event
from rocketstore.client.push_types import local_ip, new_instance_name
from rocketstore.client.route import (
    AUTO_CREATE_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    MessageQueue,
    RouteCache,
    check,
    namesrv_addr_or_env,
)
from rocketstore.client.trace import DEFAULT_REGION_ID
from rocketstore.errors import LoopBoundError, RemotingError, RocketStoreError
from rocketstore.message.batch import BATCH_ENTRY_HEADER, BatchEntry, encode_batch
from rocketstore.message.hashing import java_string_hash
from rocketstore.message.java_numbers import number_format_remark, parse_java_int
from rocketstore.message.names import NAME_CHARS, TOPIC_MAX_LENGTH, group_problem
from rocketstore.message.properties import (
    PROPERTY_SEPARATOR,
    PropertyName,
    encode_properties,
    properties_problem,
    waits_store_msg_ok,
)
from rocketstore.message.record import SysFlag
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from rocketstore.remoting.bodies import HeartbeatData, TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.templates import JsonRequestTemplate
from rocketstore.remoting.tls import ClientTls, client_ssl_context
from rocketstore.remoting.transport import Connection, ConnectionPool
from rocketstore.repeats import FailureRuns

if TYPE_CHECKING:
    from rocketstore.client.trace_producer import ProducerTrace

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "DEFAULT_PRODUCER_GROUP", "REPLY_MESSAGE_FLAG", "REPLY_TOPIC_SUFFIX",
           "HasProperties", "OutgoingMessage", "Producer", "QueueSelector", "SendResult", "hash_queue_selector",
           "new_uniq_key", "new_uniq_keys", "reply_properties"]

log = logging.getLogger(__name__)

#: ``selector(queues, sharding_key) -> one of queues``, as RocketMQ's MessageQueueSelector
QueueSelector = Callable[[list[MessageQueue], object], MessageQueue]


def _java_number_hash(value: int) -> int:
    """hashCode of the Java number *value* would be: an Integer's is itself (as the C++ client's hashing
    selector takes ``arg % size``), a Long's ``(int) (v ^ (v >>> 32))`` (of its low 64 bits beyond)."""
    if -(1 << 31) <= value < (1 << 31):
        return value
    v = value & 0xFFFFFFFFFFFFFFFF
    h = (v ^ (v >> 32)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def hash_queue_selector(queues: list[MessageQueue], sharding_key: object) -> MessageQueue:
    """SelectMessageQueueByHash: ``abs(key.hashCode() % len(queues))``: String.hashCode of text, and of an
    int Integer.hashCode (itself) when it fits 32 bits, else Long.hashCode, as a Java ``long`` key hashes."""
    code = _java_number_hash(sharding_key) if isinstance(sharding_key, int) else java_string_hash(str(sharding_key))
    # Java's % keeps the dividend's sign
    index = abs(code) % len(queues)
    return queues[index]

_SEND_STATUS: dict[int, str] = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}


def _ip_bytes() -> bytes:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            return socket.inet_aton(s.getsockname()[0])
    except OSError:
        return b"\x7f\x00\x00\x01"


_DEFAULT_QUEUE_NUMS_TEXT = str(DEFAULT_TOPIC_QUEUE_NUMS)
# plain ints: an IntEnum code takes the frame encoder's checked (slower) path
_SEND_MESSAGE_V2 = int(RequestCode.SEND_MESSAGE_V2)
_SEND_BATCH_MESSAGE = int(RequestCode.SEND_BATCH_MESSAGE)
_SEND_REPLY_MESSAGE_V2 = int(RequestCode.SEND_REPLY_MESSAGE_V2)
#: the group of the producer every 4.9.3 MQClientInstance starts for itself (MixAll.CLIENT_INNER_PRODUCER_GROUP):
#: its heartbeats carry it beside the user's group, so the brokers' producer tables list every Java client
#: under it; ours do the same (a Producer's heartbeats name both groups, its close unregisters both)
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
#: MixAll.DEFAULT_PRODUCER_GROUP: our Producer's default group (4.9.3's DefaultMQProducerImpl.checkConfig
#: refuses it at start; of ours only TransactionProducer refuses it)
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
#: MSG_TYPE of a reply (Java's MixAll.REPLY_MESSAGE_FLAG); such a message goes out as SEND_REPLY_MESSAGE_V2
REPLY_MESSAGE_FLAG = "reply"
#: the reply topic of a cluster is "<cluster>" + this (MixAll.getReplyTopic)
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"
_SUCCESS = int(ResponseCode.SUCCESS)
#: bodies from this size on go through Connection.request, which writes them beside the header uncopied
_TEMPLATE_BODY_LIMIT = 16384
#: Java DefaultMQProducer.maxMessageSize: the largest body (a batch's encoded body) a producer sends
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024
#: Java DefaultMQProducer.compressMsgBodyOverHowmuch: a body this long or longer is sent zlib-compressed
DEFAULT_COMPRESS_OVER = 4 * 1024
#: the Java producer's zipCompressLevel (system property rocketmq.message.compressLevel, 5)
DEFAULT_COMPRESS_LEVEL = 5
_COMPRESSED = int(SysFlag.COMPRESSED)
_FIX = _ip_bytes() + struct.pack(">hi", os.getpid() & 0x7FFF, random.getrandbits(31))
_FIX_HEX = _FIX.hex().upper()
_PROPERTIES_LENGTH = struct.Struct(">h")
_COUNTER = itertools.count()


def topic_problem(topic: str) -> str | None:
    """Why a producer may not send to *topic* (Java's Validators.checkTopic and isNotAllowedSendTopic, their
    wording), or None."""
    problem = topic_name_problem(topic)
    if problem is None and topic == SCHEDULE_TOPIC:
        return f"Sending message to topic[{topic}] is forbidden."
    return problem


def topic_name_problem(topic: str) -> str | None:
    """Why *topic* is no topic name Java's Validators.checkTopic takes (its wording), or None."""
    if not topic or not topic.strip():
        return "The specified topic is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    if not NAME_CHARS.issuperset(topic):
        return f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    return None


def _body_problem(body: bytes, max_message_size: int) -> str | None:
    """Why a producer may not send *body* (Java's Validators.checkMessage), or None."""
    if not body:
        return "the message body length is zero"
    if len(body) > max_message_size:
        return f"the message body size over max value, MAX: {max_message_size}"
    return None


#: the properties a send to a %RETRY% topic moves into its header (DefaultMQProducerImpl.sendKernelImpl):
#: RECONSUME_TIME becomes reconsumeTimes ("j"), MAX_RECONSUME_TIMES maxReconsumeTimes ("l"); the broker
#: sends the message on to %DLQ% when the one reaches the other, as it does a Java producer's
_RETRY_HEADER_PROPERTIES = ((PropertyName.RECONSUME_TIME, "j"), (PropertyName.MAX_RECONSUME_TIMES, "l"))


def _retry_header_fields(topic: str, properties: dict[str, str]) -> dict[str, str] | None:
    """For a send to a %RETRY% topic: the header fields its RECONSUME_TIME / MAX_RECONSUME_TIMES properties
    give (as Integer.valueOf reads them and the header writes them back); None when there are none (the
    header's reconsumeTimes stays 0, maxReconsumeTimes unset).  The properties stay: sendKernelImpl writes
    the properties string before it reads the two, so the stored record keeps them.  A value that is
    no Java int raises ClientError, as Integer.valueOf's NumberFormatException ends Java's send."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    fields: dict[str, str] = {}
    for name, key in _RETRY_HEADER_PROPERTIES:
        value = properties.get(name)
        if value is None:
            continue
        try:
            fields[key] = str(parse_java_int(value))
        except ValueError:
            raise ClientError(f'{name} of a message to {topic} is no int: For input string: "{value}"') from None
    return fields or None


def _chosen_queue(topic: str, queue_id: int | None, message_queue: MessageQueue) -> tuple[int, str]:
    """(queue id, broker name) of a send to *message_queue* (Java's send(msg, mq)); ValueError with a
    *queue_id* too, ClientError for another topic's queue (4.9.3: "message's topic not equal mq's topic")."""
    if queue_id is not None:
        raise ValueError("give queue_id or message_queue, not both")
    if message_queue.topic != topic:
        raise ClientError(f"message's topic not equal mq's topic: {topic!r} != {message_queue.topic!r}")
    return message_queue.queue_id, message_queue.broker_name


def _not_a_target(topic: str, targets: _Targets, queue_id: int, broker_name: str | None) -> NoRouteError:
    """What a send to a queue id (of *broker_name*) that no broker of the route takes raises."""
    if broker_name is not None and broker_name not in targets.addrs:
        return NoRouteError(topic, f"the broker[{broker_name}] is not a publish broker of topic {topic!r} "
                                   f"(its brokers: {sorted(targets.addrs)})")
    where = "" if broker_name is None else f" on broker {broker_name}"
    return NoRouteError(topic, f"queueId {queue_id} is not a writeable queue of topic {topic!r}{where} "
                               f"(its queue ids: {sorted(targets.by_queue_id)})")


def send_call_timeout(queue_id: int | None) -> SendCallTimeoutError:
    """What a send whose timeout is spent before its request goes out raises (4.9.3's
    RemotingTooMuchRequestException, its wording): sendDefaultImpl's, or sendKernelImpl's for a chosen queue
    (send(msg, mq) looks the route up there)."""
    return SendCallTimeoutError(f"{'sendDefaultImpl' if queue_id is None else 'sendKernelImpl'} call timeout")


def _send_code(properties: Mapping[str, str]) -> int:
    """The request code of a message with *properties*: SEND_REPLY_MESSAGE_V2 for a reply (MSG_TYPE=reply),
    whatever way it goes out (MQClientAPIImpl.sendMessage decides so for sync, oneway and selector sends)."""
    reply = properties.get(PropertyName.MSG_TYPE) == REPLY_MESSAGE_FLAG
    return _SEND_REPLY_MESSAGE_V2 if reply else _SEND_MESSAGE_V2


def _waits_store(message: OutgoingMessage) -> bool:
    return waits_store_msg_ok(message.properties)


#: a batch's own properties (the SEND_BATCH_MESSAGE header's), by its first message's waitStoreMsgOK: Java's
#: MessageBatch.generateFromList gives the batch that WAIT, which 4.9.3's broker honours for the whole batch
#: and appends (with CLUSTER) to each entry's stored properties
_BATCH_PROPERTIES = {waits: encode_properties({PropertyName.WAIT: "true" if waits else "false"})
                     for waits in (True, False)}


def _batch_problem(topic: str, messages: list[OutgoingMessage], max_message_size: int) -> str | None:
    """Why *messages* may not go out as a batch to *topic* (Java's MessageBatch.generateFromList, then
    Validators.checkMessage of each), or None; column-wise, without Python work per message in the usual
    batch (no properties)."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "Retry Group is not supported for batching"
    if any(map(_message_properties, messages)):
        first_waits = _waits_store(messages[0])
        for message in messages:
            delay = message.properties.get(PropertyName.DELAY)
            if delay is not None:  # getDelayTimeLevel: Integer.parseInt, whose NumberFormatException ends it
                try:
                    if parse_java_int(delay) > 0:
                        return "TimeDelayLevel is not supported for batching"
                except ValueError:
                    return number_format_remark(delay)
            if _waits_store(message) != first_waits:
                return "The waitStoreMsgOK of the messages in one batch should the same"
    lengths = list(map(len, map(_message_body, messages)))
    if not all(lengths):
        return "the message body length is zero"
    if max(lengths) > max_message_size:
        return f"the message body size over max value, MAX: {max_message_size}"
    # what the broker would not store as given (properties_problem): tags column-wise (the usual batch
    # shares one), then each message with keys or properties of its own; "-" stands for a UNIQ_KEY to come
    for tags in set(map(_message_tags, messages)):
        if tags and PROPERTY_SEPARATOR in tags:
            return properties_problem({PropertyName.TAGS: tags})
    if any(map(_message_properties, messages)) or any(map(_message_keys, messages)):
        for message in messages:
            if message.properties or message.keys:
                problem = properties_problem(message.property_map("-"))
                if problem is not None:
                    return problem
    return None


def _month_bounds_ms() -> tuple[int, int]:
    """(start of this month, start of the next one) in ms, local time, as MessageClientIDSetter keeps them."""
    now = datetime.now(UTC).astimezone()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return int(start.timestamp() * 1000), int(following.timestamp() * 1000)


_MONTH_START_MS, _NEXT_MONTH_START_MS = _month_bounds_ms()


def new_uniq_key() -> str:
    """A 32-hex-digit client message id in MessageClientIDSetter's layout.

    The time part is the ms since the start of the month cast to a Java int, as the Java client writes it:
    from the 25th day of a month on it no longer fits 31 bits and is written as a negative int (its low 32
    bits), not folded back to a small positive number."""
    # the hex of struct.pack(">IH", ms, counter) appended to the fixed part's, without packing per key
    return f"{_FIX_HEX}{_month_ms():08X}{next(_COUNTER) & 0xFFFF:04X}"


def _month_ms() -> int:
    """The key's time field now: ms since the start of the month, as the low 32 bits of Java's int."""
    global _MONTH_START_MS, _NEXT_MONTH_START_MS
    now = int(time.time() * 1000)
    if now >= _NEXT_MONTH_START_MS:
        _MONTH_START_MS, _NEXT_MONTH_START_MS = _month_bounds_ms()
    diff = now - _MONTH_START_MS
    if -1_000_000 < diff < 0:  # the clock stepped back over the month's start (NTP): Java writes 0
        diff = 0
    return diff & 0xFFFFFFFF


_KEY_CHARS = len(_FIX_HEX) + 12
_LOW16 = 0xFFFF.__and__


def new_uniq_keys(count: int) -> str:
    """*count* :func:`new_uniq_key` keys joined by commas (a batch's ``msg_id``), made by a few C calls:
    the clock is read once (keys made within one ms share it anyway), the counter advances by *count*, and
    the counters' low 16 bits are packed big-endian and hexed four digits apiece (%04X's digits) with a
    comma between, each comma then followed by the keys' shared part: ~5 us for 64 keys where a %-format
    of 64 ints took ~10."""
    if count < 1:
        return ""
    head = f"{_FIX_HEX}{_month_ms():08X}"
    # the counter values taken in one C-level call: no other thread can take one in the middle (the keys
    # of two batches made at once never overlap)
    counters = map(_LOW16, tuple(islice(_COUNTER, count)))
    return head + struct.pack(f">{count}H", *counters).hex(",", 2).upper().replace(",", "," + head)


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0

    def property_map(self, uniq_key: str) -> dict[str, str | None]:
        props: dict[str, str | None] = dict(self.properties)
        if self.tags:
            props[PropertyName.TAGS] = self.tags
        if self.keys:
            props[PropertyName.KEYS] = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
        props.setdefault(PropertyName.UNIQ_KEY, uniq_key)  # a UNIQ_KEY of the user's stays (setUniqID)
        props.setdefault(PropertyName.WAIT, "true")
        return props

    def uniq_key(self) -> str:
        """The message's UNIQ_KEY: the user's, else a new one (MessageClientIDSetter.setUniqID keeps one set)."""
        return self.properties.get(PropertyName.UNIQ_KEY) or new_uniq_key()


class HasProperties(Protocol):
    @property
    def properties(self) -> Mapping[str, str]: ...


def reply_properties(request: HasProperties, properties: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """The topic and properties of the reply to *request* (Java's MessageUtil.createReplyMessage): the reply
    topic of the request's CLUSTER (which the broker added when it stored the request), MSG_TYPE=reply, and
    the request's CORRELATION_ID, REPLY_TO_CLIENT and TTL, those it has; *properties* (the user's) beside
    them.
    ValueError (Java's MQClientException, its wording) when *request* has no CLUSTER; a request without
    REPLY_TO_CLIENT still gets its reply, which the broker then refuses to push ("reply message
    properties[REPLY_TO_CLIENT] is null"), as createReplyMessage leaves that to the broker."""
    props = request.properties
    cluster = props.get(PropertyName.CLUSTER)
    if cluster is None:
        raise ValueError("create reply message fail, requestMessage error, "
                         f"property[{PropertyName.CLUSTER}] is null.")
    reply = dict(properties or {})
    reply[PropertyName.MSG_TYPE] = REPLY_MESSAGE_FLAG
    for name in (PropertyName.CORRELATION_ID, PropertyName.REPLY_TO_CLIENT, PropertyName.TTL):
        value = props.get(name)
        if value is not None:
            reply[name] = value
    return cluster + REPLY_TOPIC_SUFFIX, reply


def _properties_template(with_tags: bool) -> str:
    """The property string of a message with only (tags,) UNIQ_KEY and WAIT as encode_properties lays it
    out, with ``{0}`` for the tags and ``{1}`` for the key: str.format inserts the values verbatim."""
    props: dict[str, str | None] = {PropertyName.TAGS: "\x00{0}\x00"} if with_tags else {}
    props[PropertyName.UNIQ_KEY] = "\x00{1}\x00"
    props[PropertyName.WAIT] = "true"
    # property names are constants without braces; the markers keep any brace of theirs from mattering
    text = encode_properties(props).replace("{", "{{").replace("}", "}}")
    return text.replace("\x00{{0}}\x00", "{0}").replace("\x00{{1}}\x00", "{1}")


_TAGGED_PROPERTIES = _properties_template(True)
_UNTAGGED_PROPERTIES = _properties_template(False)


def _check_properties(properties: Mapping[str, str | None]) -> None:
    """MessageIllegalError, before anything is sent, for properties (a property_map) the broker would not
    store as given (see properties_problem)."""
    problem = properties_problem(properties)
    if problem is not None:
        raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, problem)


def _check_tags(tags: str | None) -> None:
    """_check_properties of a message with only *tags* (and UNIQ_KEY and WAIT): a send laid out from a
    template, whose tags alone can hold a separator."""
    if tags and PROPERTY_SEPARATOR in tags:
        _check_properties({PropertyName.TAGS: tags})


def _property_text(message: OutgoingMessage, uniq_key: str) -> str:
    """``encode_properties(message.property_map(uniq_key))``, from a template for the usual message
    without keys or user properties."""
    if message.properties or message.keys:
        return encode_properties(message.property_map(uniq_key))
    return (_TAGGED_PROPERTIES if message.tags else _UNTAGGED_PROPERTIES).format(message.tags, uniq_key)


_message_body = attrgetter("body")
_message_tags = attrgetter("tags")
_message_keys = attrgetter("keys")
_message_properties = attrgetter("properties")
_message_flag = attrgetter("flag")
#: (tags, flag, body length) -> the constant parts of every batch entry of that shape (_entry_parts)
_ENTRY_PARTS: dict[tuple[str | None, int, int], tuple[bytes, bytes, bytes, bytes]] = {}


def _entry_parts(tags: str | None, flag: int, body_length: int) -> tuple[bytes, bytes, bytes, bytes] | None:
    """What every entry of a uniform batch has in common, around its body and its key: (the entry's
    20-byte header, the properties length and the properties before the key, the properties after the
    key followed by the next entry's header, the properties after the key alone).  None when the
    properties do not fit their length word (encode_batch raises PropertiesTooLargeError)."""
    shape = (tags, flag, body_length)
    parts = _ENTRY_PARTS.get(shape)
    if parts is None:
        before, after = (_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).split("{1}")
        head = before.format(tags).encode()
        tail = after.format(tags).encode()
        properties_length = len(head) + _KEY_CHARS + len(tail)
        if properties_length > 32767:
            return None
        header = BATCH_ENTRY_HEADER.pack(BATCH_ENTRY_HEADER.size + body_length + 2 + properties_length, 0, 0,
                                         flag, body_length)
        if len(_ENTRY_PARTS) >= 256:
            _ENTRY_PARTS.clear()
        parts = _ENTRY_PARTS[shape] = (header, _PROPERTIES_LENGTH.pack(properties_length) + head,
                                       tail + header, tail)
    return parts


def _uniform_batch_body(messages: list[OutgoingMessage], keys_text: str) -> bytes | None:
    """``encode_batch`` of *messages* with the keys of *keys_text*, column-wise, for the usual batch: every
    message with the same tags, flag and body length and no keys or user properties.  Then the entries
    differ in body and key only, and the body is one join of the bodies and keys laid between the parts
    all entries share (_entry_parts): no BatchEntry, property string or struct pack per message.  None for
    any other batch (the caller goes through encode_batch).  A unit test holds this equal to encode_batch."""
    count = len(messages)
    first = messages[0]
    tags, flag = first.tags, first.flag
    bodies = list(map(_message_body, messages))
    body_length = len(bodies[0])
    if (list(map(_message_tags, messages)).count(tags) != count or any(map(_message_keys, messages))
            or any(map(_message_properties, messages)) or list(map(_message_flag, messages)).count(flag) != count
            or list(map(len, bodies)).count(body_length) != count):
        return None
    keys = keys_text.encode()
    if len(keys) != count * (_KEY_CHARS + 1) - 1:
        return None  # not *count* keys of new_uniq_keys' length
    parts = _entry_parts(tags, flag, body_length)
    if parts is None:
        return None
    header, before_key, between, last = parts
    # [header, body, before_key, key, between, body, before_key, key, between, ..., key, last]
    pieces = [header, b"", before_key, b"", *[between, b"", before_key, b""] * (count - 1), last]
    pieces[1::4] = bodies
    pieces[3::4] = keys.split(b",")
    return b"".join(pieces)


@dataclass(frozen=True, slots=True)
class SendResult:
    status: str
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    #: the answer's MSG_REGION and TRACE_ON (Java's SendResult regionId / traceOn): the broker's regionId, and
    #: whether its traceOn lets the send be traced
    region_id: str = DEFAULT_REGION_ID
    trace_on: bool = True


_SEND_RESULT_SETTERS = tuple(getattr(SendResult, name).__set__ for name in (
    "status", "msg_id", "offset_msg_id", "message_queue", "queue_offset", "region_id", "trace_on"))


def _new_send_result(status: str, msg_id: str, offset_msg_id: str, message_queue: MessageQueue,
                     queue_offset: int, region_id: str, trace_on: bool) -> SendResult:
    """``SendResult(...)`` filling the slots directly (as remoting's new_command does): the frozen
    dataclass's ``__init__`` goes through ``object.__setattr__`` by name, a cost paid once per send."""
    result = object.__new__(SendResult)
    set_status, set_msg_id, set_offset_msg_id, set_queue, set_offset, set_region, set_trace_on = _SEND_RESULT_SETTERS
    set_status(result, status)
    set_msg_id(result, msg_id)
    set_offset_msg_id(result, offset_msg_id)
    set_queue(result, message_queue)
    set_offset(result, queue_offset)
    set_region(result, region_id)
    set_trace_on(result, trace_on)
    return result


@dataclass(frozen=True, slots=True)
class _Targets:
    """Where a topic's sends may go under one route: its publish queues and each broker's master address
    (publish queues exist only for brokers with one), worked out once per route rather than per send."""

    route: TopicRouteData
    queues: list[MessageQueue]
    addrs: dict[str, str]
    #: queue id -> the queues with that id (a send to a chosen queue id)
    by_queue_id: dict[int, list[MessageQueue]]


class Producer:
    #: how a failed heartbeat or unregistration is logged: a plain producer's heartbeats only make it known to
    #: the brokers' producer tables (its sends report their own failures), so at INFO, which an application
    #: that did not configure logging does not see on stderr (Java logs them to its client log file);
    #: ServedProducer, whose callbacks depend on them, warns
    heartbeat_failure_level = logging.INFO

    def __init__(self, namesrv_addr: str | None = None, group: str = DEFAULT_PRODUCER_GROUP, *,
                 timeout_s: float = 3.0,
                 retry_times: int = 2, credentials: SessionCredentials | None = None, enable_trace: bool = False,
                 trace_topic: str | None = None, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 compress_msg_body_over_howmuch: int = DEFAULT_COMPRESS_OVER,
                 compress_level: int = DEFAULT_COMPRESS_LEVEL, heartbeat_interval_s: float = 30.0,
                 instance_name: str | None = None, tls: ClientTls = None,
                 mq_client_api_timeout_s: float = 3.0, route_refresh_interval_s: float = 30.0) -> None:
        """*namesrv_addr*: ``host:port[;host:port]``; None: the environment variable ``NAMESRV_ADDR``, as
        4.9.3's clients (ClientConfig's default namesrvAddr; without either, ValueError "No name server
        address, please set it.").
        *credentials*: ACL access key and secret every request (name servers' too) is signed with;
        *tls*: this producer's own TLS switch (4.9.3's setUseTLS; None follows the process, see
        :data:`rocketstore.remoting.tls.ClientTls`), which its trace producer shares;
        *enable_trace*: record each send's Pub trace (see :mod:`rocketstore.client.trace_producer`) and send
        it in the background to *trace_topic* (default RMQ_SYS_TRACE_TOPIC), as DefaultMQProducer(group,
        enableMsgTrace, customizedTraceTopic).  *max_message_size* (Java's maxMessageSize, 4 MiB): a larger
        body (a batch's encoded body) is refused before anything is sent, as Java's Validators.checkMessage
        refuses it, with MessageIllegalError; so are an empty body and a topic it refuses (blank, over 127
        characters, outside ``^[%|a-zA-Z0-9_-]+$``, SCHEDULE_TOPIC_XXXX), on every send path, and a batch
        message with a delay level or for a retry topic (as MessageBatch.generateFromList).
        *compress_msg_body_over_howmuch* and *compress_level* (Java's compressMsgBodyOverHowmuch, 4 KiB, and
        zipCompressLevel, 5): a body of that many bytes or more goes out zlib-compressed with sysFlag
        COMPRESSED, as the Java producer sends it (not a batch's); consumers inflate it.
        *heartbeat_interval_s* (Java's heartbeatBrokerInterval, 30 s), *route_refresh_interval_s* (Java's
        pollNameServerInterval, 30 s, named as the consumers' setting) and *instance_name*: see "Heartbeats"
        in the module's docstring; the client id is ``ip@instance_name`` (default ``pid#nanos``).
        *mq_client_api_timeout_s* (Java's ClientConfig.mqClientApiTimeout, 3 s): the bound of each route
        look-up from the name servers, heartbeat and unregistration (4.9.3's MQClientInstance passes it to
        getTopicRouteInfoFromNameServer, sendHearbeat and unregisterClient), not *timeout_s*, which bounds
        sends."""
        namesrv_addr = namesrv_addr_or_env(namesrv_addr)
        if heartbeat_interval_s <= 0:
            raise ValueError("heartbeat_interval_s must be positive")
        if not route_refresh_interval_s > 0:
            raise ValueError("route_refresh_interval_s must be positive")
        if mq_client_api_timeout_s <= 0:
            raise ValueError("mq_client_api_timeout_s must be positive")
        self.mq_client_api_timeout_s = mq_client_api_timeout_s
        self.group = group
        self.max_message_size = max_message_size
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.timeout_s = timeout_s
        self.retry_times = retry_times
        self.pool = ConnectionPool(handler=self._serve_broker, connect_timeout_s=timeout_s, credentials=credentials,
                                   ssl_context=client_ssl_context(tls))
        #: bodies shorter than this go out as a template's frame; 0 with credentials (a signed request is a
        #: RemotingCommand whose extFields the connection signs), so the send path tests nothing more per send
        self._template_body_limit = 0 if credentials is not None else _TEMPLATE_BODY_LIMIT
        self.routes = RouteCache([a for a in namesrv_addr.split(";") if a], self.pool,
                                 timeout_s=mq_client_api_timeout_s, on_route=self._route_seen)
        self._next_queue = itertools.count(random.randrange(1024))
        self.heartbeat_interval_s = heartbeat_interval_s
        self.route_refresh_interval_s = route_refresh_interval_s
        self.client_id = f"{local_ip()}@{instance_name or new_instance_name()}"
        #: broker name -> master address, from every route seen (Java's brokerAddrTable)
        self._brokers: dict[str, str] = {}
        #: master address -> the connection its last heartbeat from this producer went out on
        self._heartbeated: dict[str, Connection] = {}
        #: topics whose routes the name servers answered: re-read before each periodic heartbeat
        self._topics: set[str] = set()
        #: topic -> every broker address (masters and slaves) of the last route the name servers answered for
        #: it (4.9.3's topicRouteTable): a master none of them names is forgotten (cleanOfflineBroker)
        self._route_addrs: dict[str, frozenset[str]] = {}
        self._heartbeat_task: asyncio.Task[None] | None = None
        #: the failures in a row of the heartbeats and route refreshes (a broker or the name servers down fail
        #: them every round): logged once (and every 1000th), not once a round
        self.failure_runs = FailureRuns()
        #: set when a route shows a master not heartbeated yet, and when the heartbeats stop
        self._due = asyncio.Event()
        self.started = False
        #: start() failed (the group refused): a start again raises START_FAILED (see service_state)
        self.start_failed = False
        #: no more heartbeats (close() began); sends are refused from then on
        self.closed = False
        self._shut_down = False
        #: topic -> where its sends go under the route last seen: recomputed only when the route changes
        self._targets: dict[str, _Targets] = {}
        #: (group, topic, queue id, batch, flag, code, with properties, sysFlag) -> the request frames' template
        self._frame_templates: dict[tuple[str, str, int, bool, int, int, bool, int], JsonRequestTemplate] = {}
        #: address -> the pool's connection last used there, taken again while it is open (pool.get otherwise)
        self._connections: dict[str, Connection] = {}
        #: topics that passed topic_problem, checked again only when this set is cleared
        self._checked_topics: set[str] = set()
        #: the message trace (None: off, and then the send paths test nothing more than this)
        self.trace: ProducerTrace | None = None
        if enable_trace:
            # imported here: the trace modules import this one
            from rocketstore.client.trace_producer import ProducerTrace

            self.trace = ProducerTrace(self, namesrv_addr, trace_topic=trace_topic, credentials=credentials,
                                       tls=self.pool.tls)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the heartbeats, as DefaultMQProducer.start: in the background, the masters of the auto-create
        topic's route (where new topics go) are heartbeated at once, then every ``heartbeat_interval_s``;
        nothing here waits for the network.  Optional: the first route a send reads starts the heartbeats
        of a producer not started.  ClientError once closed, and for a group name 4.9.3's
        Validators.checkGroup refuses (blank, over 255 characters, outside ``^[%|a-zA-Z0-9_-]+$``), which
        every send refuses too; a start after that one raises 4.9.3's "The producer service state not OK,
        maybe started once, START_FAILED"."""
        self.check_startable()
        if self.started:
            return
        try:
            self._check_group()
        except ClientError:
            self.start_failed = True  # never again: 4.9.3 leaves such a producer START_FAILED for good
            raise
        self.started = True
        self._start_heartbeats()

    def check_startable(self) -> None:
        """ClientError in DefaultMQProducerImpl.start's words ("The producer service state not OK, maybe
        started once, SHUTDOWN_ALREADY") once closed or after a failed start (START_FAILED).  A second start
        of a running producer is let through (it does nothing), unlike 4.9.3's: a send starts the
        heartbeats of a producer never started, so callers may not know whether it was."""
        state = self.service_state
        if state in (ServiceState.SHUTDOWN_ALREADY, ServiceState.START_FAILED):
            cause = "the producer is closed" if state is ServiceState.SHUTDOWN_ALREADY else \
                "the first start of the producer failed"
            raise ClientError(state_not_ok("producer", state, cause, started_once=True))

    @property
    def service_state(self) -> ServiceState:
        """4.9.3's getServiceState: CREATE_JUST until :meth:`start` (sends work then too, as the module's
        docstring says), RUNNING after it, SHUTDOWN_ALREADY once closed, START_FAILED after a start that
        failed (for good: closing it does not change it, as in 4.9.3)."""
        return state_of(started=self.started, shut_down=self.closed, start_failed=self.start_failed)

    @property
    def is_running(self) -> bool:
        """Started and not closed (:attr:`service_state` RUNNING; 4.9.3's isRunning of its lite pull
        consumer, which every client here has)."""
        return self.service_state is ServiceState.RUNNING

    def update_namesrv_addr(self, namesrv_addr: str | list[str]) -> None:
        """Ask the name servers of *namesrv_addr* (``host:port[;host:port]``, as the constructor's) from now
        on, its trace producer's too: 4.9.3's setNamesrvAddr on a running client (see
        :meth:`RouteCache.update_namesrv_addrs`; an empty one is ignored).  On the producer's loop, or
        before it has one."""
        self.routes.update_namesrv_addrs(namesrv_addr)
        if self.trace is not None:
            self.trace.dispatcher.producer.update_namesrv_addr(namesrv_addr)

    async def stop_heartbeats(self) -> None:
        """No more heartbeats (the first step of closing; what the producer still has in flight may finish
        before :meth:`close`)."""
        self.closed = True
        self._due.set()
        task = self._heartbeat_task
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        """Stop the heartbeats, unregister the group from every broker heartbeated (UNREGISTER_CLIENT, as
        DefaultMQProducer.shutdown), send the trace still waiting, close the connections.  A second call
        does nothing."""
        await self.stop_heartbeats()
        if self._shut_down:
            return
        self._shut_down = True
        for addr in sorted(self._heartbeated):
            await self.quietly(f"unregister from {addr}", self._unregister(addr))
        self._heartbeated.clear()
        if self.trace is not None:  # the trace waiting is sent first (it has its own producer)
            await self.trace.close()
        await self.pool.close()

    async def discover(self, topic: str, *, refresh: bool = False) -> None:
        """Note the masters of *topic*'s publish route and heartbeat the ones not heartbeated yet (or whose
        heartbeated connection closed), so that a broker that stores a message of *topic* knows this
        producer before it could call it back."""
        route, _ = await self.routes.publish_route(topic, refresh=refresh)
        for addr in self._note_masters(route):
            heartbeated = self._heartbeated.get(addr)
            if heartbeated is None or heartbeated.is_closed:
                await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))

    async def discover_quietly(self, topic: str) -> None:
        """:meth:`discover`, its failure logged at debug level: brokers that do not auto-create topics have
        no TBW102, and a name server away fails the sends anyway."""
        try:
            await self.discover(topic)
        except (RocketStoreError, OSError) as exc:
            log.debug("no route of %s to heartbeat its masters: %s", topic, exc)

    def heartbeat_data(self) -> HeartbeatData:
        """HEART_BEAT's body: this client id, and in producerDataSet the group and CLIENT_INNER_PRODUCER, the
        inner producer's that every 4.9.3 MQClientInstance registers beside the user's (prepareHeartbeatData)."""
        if self.group == CLIENT_INNER_PRODUCER_GROUP:
            return HeartbeatData(self.client_id, (self.group,), ())
        return HeartbeatData(self.client_id, (self.group, CLIENT_INNER_PRODUCER_GROUP), ())

    async def quietly(self, what: str, coro: Awaitable[None]) -> None:
        """Await *coro*; a failure is logged at :attr:`heartbeat_failure_level` (the next heartbeat period or
        send tries again)."""
        await logged(log, what, coro, self.heartbeat_failure_level)

    async def periodically(self, what: str, coro: Awaitable[None]) -> None:
        """Await *coro*, a round of the heartbeats or route refreshes: a failure is logged as :meth:`quietly`
        logs it, but of a run of failures of *what* (a broker down fails every round) the first and every
        1000th at that level, the others at DEBUG, and the round that works again says so at INFO."""
        await logged(log, what, coro, self.heartbeat_failure_level, runs=self.failure_runs)

    def _start_heartbeats(self) -> None:
        """Run the heartbeat loop on the running event loop, unless it runs there already: a producer used
        from one ``asyncio.run`` to the next gets a new one on each loop (the last loop's was cancelled when
        that loop ended; a task and the Event it waits on belong to one loop)."""
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        task = self._heartbeat_task
        if task is not None and task.get_loop() is loop and not task.done():
            return
        if task is not None:
            due, self._due = self._due.is_set(), asyncio.Event()
            if due:
                self._due.set()
        self._heartbeat_task = loop.create_task(self._heartbeat_loop())
        # its rounds re-read the routes: a send uses the route it has, whatever its age, meanwhile
        self.routes.refreshed_by(self._heartbeat_task)

    def _route_seen(self, topic: str, route: TopicRouteData) -> None:
        """A route the name servers answered (RouteCache's on_route): its masters join the ones heartbeated,
        a new one right away (the heartbeat loop wakes; a send does not wait for it)."""
        if self.closed:
            return
        self._topics.add(topic)
        self._route_addrs[topic] = RouteCache.broker_addrs(route)
        for addr in self._note_masters(route):
            heartbeated = self._heartbeated.get(addr)
            if heartbeated is None or heartbeated.is_closed:
                self._due.set()
        if self._due.is_set():
            self._start_heartbeats()

    def _note_masters(self, route: TopicRouteData) -> list[str]:
        addrs = []
        for bd in route.broker_datas:
            addr = bd.master_addr()
            if addr is not None:
                self._brokers[bd.broker_name] = addr
                addrs.append(addr)
        return addrs

    async def _heartbeat(self, addr: str) -> None:
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, self.heartbeat_data().encode())
        connection = await self.pool.get(addr)
        check(await connection.request(request, self.mq_client_api_timeout_s))
        self._heartbeated[addr] = connection

    async def _unregister(self, addr: str) -> None:
        """UNREGISTER_CLIENT for the group, then for CLIENT_INNER_PRODUCER (4.9.3's shutdown unregisters the
        user's producer, then MQClientInstance.shutdown its inner one)."""
        for group in dict.fromkeys((self.group, CLIENT_INNER_PRODUCER_GROUP)):
            await group_requests.unregister(self.pool, addr, self.client_id, group,
                                            self.mq_client_api_timeout_s, producer=True)

    async def _heartbeat_loop(self) -> None:
        """Every route_refresh_interval_s re-read the routes of the topics seen (MQClientInstance's
        updateTopicRouteInfoFromNameServer every pollNameServerInterval), and every heartbeat_interval_s
        heartbeat every master known (sendHeartbeatToAllBroker every heartbeatBrokerInterval), each on its
        own schedule: a long heartbeat interval does not hold route changes back, nor a rare re-read the
        heartbeats; in between, as soon as a route shows a master not heartbeated yet, heartbeat that one."""
        # TBW102 first, as Java's producer puts it among its topics at start
        await self.discover_quietly(AUTO_CREATE_TOPIC)
        next_refresh = time.monotonic() + self.route_refresh_interval_s
        next_round = time.monotonic() + self.heartbeat_interval_s
        while not self.closed:
            await wait_event(self._due, min(next_refresh, next_round) - time.monotonic())
            if self.closed:
                return
            self._due.clear()
            if time.monotonic() >= next_refresh:
                # a master new in a route is heartbeated below, in this turn, not a heartbeat round later
                await self._refresh_routes()
                next_refresh = time.monotonic() + self.route_refresh_interval_s
                if self.closed:
                    return
            if time.monotonic() >= next_round:
                next_round = time.monotonic() + self.heartbeat_interval_s
                await self._forget_offline_brokers()
                for addr in sorted(set(self._brokers.values())):
                    await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))
                continue
            for addr in sorted(set(self._brokers.values())):
                heartbeated = self._heartbeated.get(addr)
                if heartbeated is None or heartbeated.is_closed:
                    await self.periodically(f"heartbeat to {addr}", self._heartbeat(addr))

    async def _forget_offline_brokers(self) -> None:
        """4.9.3's cleanOfflineBroker, before each round of heartbeats: a master that no route of this
        producer's topics names any more (its broker left the cluster for good) is heartbeated no more, not
        unregistered from at close, and its connection is closed."""
        known = frozenset().union(*self._route_addrs.values())
        gone = (set(self._brokers.values()) | set(self._heartbeated)) - known
        if not gone:
            return
        for name, addr in list(self._brokers.items()):
            if addr in gone:
                del self._brokers[name]
        for addr in sorted(gone):
            log.info("the broker %s is in no route of this producer's topics any more: forgotten", addr)
            self._heartbeated.pop(addr, None)
            self._connections.pop(addr, None)
            await self.pool.discard(addr)

    async def _refresh_routes(self) -> None:
        """Re-read the routes of the topics seen, one after another, until a look-up finds no name server
        answering: the others keep their routes until the next round.  A name server that accepts and never
        answers makes each look-up wait mq_client_api_timeout_s; asking on would hold the round's heartbeats
        back by that once per topic, and a broker drops a client not heartbeated for 120 s."""
        for topic in sorted(self._topics):
            await self.periodically(f"route of {topic}", self._refresh_route(topic))
            if self.routes.unanswered:
                break

    async def _refresh_route(self, topic: str) -> None:
        route, _ = await self.routes.publish_route(topic, refresh=True)
        self._note_masters(route)

    async def _serve_broker(self, connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """A request a broker sends on this producer's connection (it knows the connection by the
        heartbeats): a reply pushed for a RequestProducer of this client id is handed over (Java's one
        MQClientInstance serves both); a transaction check finds no listener and is dropped, as a plain
        DefaultMQProducer drops it; anything else is not supported."""
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            from rocketstore.client.request_producer import deliver_reply  # it imports this module

            return deliver_reply(request)
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            log.warning("transaction check from %s for producer group %s, which has no check listener; ignored",
                        connection.peer_address, self.group)
            return None
        return None if request.is_oneway else request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {request.code} not supported")

    def cached_master_addr(self, topic: str, broker_name: str) -> str | None:
        """The master address of *broker_name* for *topic* from the routes this producer has cached (no
        request); None when it has none.  For the trace's storeHost, off the send path."""
        targets = self._targets.get(topic)
        if targets is not None and broker_name in targets.addrs:
            return targets.addrs[broker_name]
        route = self.routes.fresh_route(topic)
        bd = route.broker(broker_name) if route is not None else None
        return bd.master_addr() if bd is not None else None

    def _check(self, topic: str, body: bytes | None) -> None:
        """Refuse a send once close() began with ClientError (Java's "The producer service state not OK,
        SHUTDOWN_ALREADY"), and what Java's Validators.checkMessage refuses before a send (the topic, then
        *body*, when given) with MessageIllegalError; nothing is sent."""
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the producer is closed"))
        if topic not in self._checked_topics:  # the first send to a topic (or a bad one): the group's name too
            self._check_group()
            problem = topic_problem(topic)
            if problem is not None:
                raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, problem)
            if len(self._checked_topics) >= 4096:
                self._checked_topics.clear()
            self._checked_topics.add(topic)
        if body is not None:
            problem = _body_problem(body, self.max_message_size)
            if problem is not None:
                raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, problem)

    def _check_group(self) -> None:
        """ClientError for a group name Validators.checkGroup refuses (DefaultMQProducerImpl.checkConfig): the
        broker would refuse its heartbeats, and Java's producer does not start with it."""
        problem = group_problem(self.group)
        if problem is not None:
            raise ClientError(problem)

    async def send(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | list[str] | None = None,
                   properties: dict[str, str] | None = None, queue_id: int | None = None,
                   timeout_s: float | None = None, message_queue: MessageQueue | None = None) -> SendResult:
        """*timeout_s*: this send's bound instead of the producer's (Java's send(msg, timeout)).
        *queue_id*: send to that queue id (on any broker of the route that has it, in turn); *message_queue*:
        to that one queue of that one broker (Java's send(msg, mq), e.g. one of
        :meth:`fetch_publish_message_queues`); neither is retried elsewhere."""
        self._check(topic, body)
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        code = _SEND_MESSAGE_V2
        retry_fields = None
        if properties and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            properties = dict(properties)
            retry_fields = _retry_header_fields(topic, properties)
        if properties or keys:
            message = OutgoingMessage(body, tags, keys, dict(properties) if properties else {})
            uniq = message.uniq_key()
            props = message.property_map(uniq)
            _check_properties(props)
            text = encode_properties(props)
            if properties and properties.get(PropertyName.MSG_TYPE) == REPLY_MESSAGE_FLAG:
                code = _SEND_REPLY_MESSAGE_V2  # as the Java client sends a reply message
        else:  # the usual send: only tags, UNIQ_KEY and WAIT, laid out once in Java's order
            _check_tags(tags)
            uniq = new_uniq_key()
            text = (_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).format(tags, uniq)
        sys_flag = 0
        if len(body) >= self.compress_msg_body_over_howmuch:  # tryToCompressMessage (the trace too sees it)
            body, sys_flag = zlib.compress(body, self.compress_level), _COMPRESSED
        if self.trace is None:
            return await self._send(topic, code, body, text, uniq, batch=False, queue_id=queue_id, flag=0,
                                    sys_flag=sys_flag, retry_fields=retry_fields, timeout_s=timeout_s,
                                    broker_name=broker_name)
        began_ms = [0]
        sending = self._send(topic, code, body, text, uniq, batch=False, queue_id=queue_id, flag=0,
                             sys_flag=sys_flag, began_ms=began_ms, retry_fields=retry_fields,
                             timeout_s=timeout_s, broker_name=broker_name)
        return await self.trace.pub(sending, topic, len(body), tags, keys, properties, began_ms=began_ms)

    async def send_reply(self, request: HasProperties, body: bytes, *, tags: str | None = None,
                         keys: str | list[str] | None = None, properties: dict[str, str] | None = None
                         ) -> SendResult:
        """Answer a request message (one a :class:`RequestProducer` sent, as a consumer received it): the
        reply goes to ``<CLUSTER>_REPLY_TOPIC`` of the request's cluster as SEND_REPLY_MESSAGE_V2, and the
        broker passes it on to the requester.  ValueError for a message without CLUSTER (see
        :func:`reply_properties`)."""
        topic, props = reply_properties(request, properties)
        return await self.send(topic, body, tags=tags, keys=keys, properties=props)

    async def send_oneway(self, topic: str, body: bytes, *, tags: str | None = None,
                          keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                          queue_id: int | None = None, message_queue: MessageQueue | None = None) -> None:
        """Send without waiting for an answer (the request's oneway flag): nothing comes back, a failed
        write raises, and there is no retry, as RocketMQ's sendOneway.  *queue_id* and *message_queue*: as
        :meth:`send`'s (Java's sendOneway(msg, mq))."""
        self._check(topic, body)
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        deadline = time.monotonic() + self.timeout_s
        body, sys_flag = self._compressed(body)
        message = OutgoingMessage(body, tags, keys, dict(properties or {}))
        retry_fields = _retry_header_fields(topic, message.properties)
        props = message.property_map(new_uniq_key())
        _check_properties(props)
        route, _ = await self.routes.publish_route(topic)
        targets = self._targets_of(topic, route)
        queues = targets.queues
        if queue_id is not None:  # any queue id the broker takes, as a send's (see _targets_of)
            chosen = self._queues_with_id(targets, queue_id, broker_name)
            if not chosen and queues:  # named as a send names it (see _send)
                raise _not_a_target(topic, targets, queue_id, broker_name)
            queues = chosen
        if not queues:
            raise NoRouteError(topic, "no writeable queue")
        mq = queues[next(self._next_queue) % len(queues)]
        addr = targets.addrs[mq.broker_name]
        ext = self._header(topic, mq.queue_id, encode_properties(props), False, message.flag,
                           sys_flag).to_ext_fields_v2()
        ext.update(retry_fields or {})
        request = RemotingCommand.request(_send_code(message.properties), ext, body, oneway=True)
        timeout_s = deadline - time.monotonic()  # the route look-up counts, as in sendDefaultImpl
        if timeout_s <= 0:
            raise send_call_timeout(None)
        try:
            await self.pool.oneway(addr, request, timeout_s)
        except LoopBoundError:
            raise  # not a failed try: the producer is used from the wrong loop (see _send)
        except RemotingError as exc:
            if queue_id is not None:  # sendOneway(msg, mq): sendKernelImpl's exception as it is
                raise
            # sendDefaultImpl's one oneway try failed: "Send [1] times, still failed" (the module's docstring)
            cost_ms = int((time.monotonic() - deadline + self.timeout_s) * 1000)
            raise send_failed(exc, topic, 1, cost_ms, (mq.broker_name,)) from exc

    async def send_orderly(self, topic: str, body: bytes, sharding_key: object, *, tags: str | None = None,
                           keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                           selector: QueueSelector = hash_queue_selector, timeout_s: float | None = None
                           ) -> SendResult:
        """Send to the queue *selector* picks for *sharding_key* among the topic's publish queues, so that
        messages with one key keep their order.  No retry on another queue (that would break the order);
        a failure raises.  *timeout_s*: this send's bound instead of the producer's (Java's
        send(msg, selector, arg, timeout))."""
        self._check(topic, body)
        body, sys_flag = self._compressed(body)
        if self.trace is None:
            return await self._send_orderly(topic, body, sys_flag, sharding_key, tags, keys, properties,
                                            selector, timeout_s=timeout_s)
        began_ms = [0]
        sending = self._send_orderly(topic, body, sys_flag, sharding_key, tags, keys, properties, selector,
                                     began_ms, timeout_s=timeout_s)
        # the Pub's bodyLength is what went out, compressed or not (Java's hook runs after tryToCompressMessage)
        return await self.trace.pub(sending, topic, len(body), tags, keys, properties, began_ms=began_ms)

    async def send_oneway_orderly(self, topic: str, body: bytes, sharding_key: object, *,
                                  tags: str | None = None, keys: str | list[str] | None = None,
                                  properties: dict[str, str] | None = None,
                                  selector: QueueSelector = hash_queue_selector) -> None:
        """:meth:`send_oneway` to the queue *selector* picks for *sharding_key*, as :meth:`send_orderly` picks
        it (Java's sendOneway(msg, selector, arg)): refused, with no route or a failing selector, in
        send_orderly's words; a failed write raises as it is (no retry, no "Send [1] times")."""
        self._check(topic, body)
        _, _, mq = await self._selected_queue(topic, sharding_key, selector)
        await self.send_oneway(topic, body, tags=tags, keys=keys, properties=properties, message_queue=mq)

    async def _selected_queue(self, topic: str, sharding_key: object, selector: QueueSelector
                              ) -> tuple[TopicRouteData, bool, MessageQueue]:
        """The publish route of *topic*, whether the name servers know it (see RouteCache.publish_route),
        and the queue *selector* picks among its publish queues for *sharding_key*; NoRouteError and the
        selector's failures in 4.9.3's sendSelectImpl's words."""
        try:
            route, known = await self.routes.publish_route(topic)
        except NoRouteError as exc:  # in sendSelectImpl's words, not sendDefaultImpl's
            raise NoRouteError(topic, exc.reason, words=f"No route info for this topic, {topic}") from exc
        queues = RouteCache.publish_queues(topic, route)
        if not queues:
            raise NoRouteError(topic, "no writeable queue", words=f"No route info for this topic, {topic}")
        try:
            mq = selector(queues, sharding_key)
        except Exception as exc:  # the user's selector: its failure is named as Java's sendSelectImpl names it
            raise ClientError(f"select message queue threw exception: {type(exc).__name__}: {exc}") from exc
        if not isinstance(mq, MessageQueue):
            raise ClientError(f"select message queue return {'null' if mq is None else repr(mq)}.")
        return route, known, mq

    async def _send_orderly(self, topic: str, body: bytes, sys_flag: int, sharding_key: object, tags: str | None,
                            keys: str | list[str] | None, properties: dict[str, str] | None,
                            selector: QueueSelector, began_ms: list[int] | None = None, *,
                            timeout_s: float | None = None) -> SendResult:
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        message = OutgoingMessage(body, tags, keys, dict(properties or {}))
        retry_fields = _retry_header_fields(topic, message.properties)
        uniq = message.uniq_key()
        props = message.property_map(uniq)
        _check_properties(props)
        route, known, mq = await self._selected_queue(topic, sharding_key, selector)
        header = self._header(topic, mq.queue_id, encode_properties(props), False, message.flag, sys_flag)
        ext = header.to_ext_fields_v2()
        ext.update(retry_fields or {})
        request = RemotingCommand.request(_send_code(message.properties), ext, body)
        addr = self._master_addr(route, mq)
        # the route look-up and the selector count against the timeout, as sendSelectImpl's costTime
        timeout_s = deadline - time.monotonic()
        if timeout_s <= 0:
            raise SendCallTimeoutError("sendSelectImpl call timeout")
        if began_ms is not None:  # the trace times the request, not the route look-up (see _send)
            began_ms[0] = int(time.time() * 1000)
        response = await self.pool.request(addr, request, timeout_s)
        result = self._result(response, uniq, mq)
        if not known:
            self.routes.invalidate(topic)
        return result

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to *topic* goes to (its brokers' write queues), from the name servers' route,
        broker by broker (:meth:`RouteCache.publish_queues`; Java's fetchPublishMessageQueues); NoRouteError
        for a topic the name servers do not know (no auto-create template here, as 4.9.3) or without a
        writeable queue, in MQAdminImpl's words ("Can not find Message Queue for this topic, <topic>").  A
        queue of it is what :meth:`send`'s *message_queue* takes."""
        if self.closed:
            raise ClientError(state_not_ok("producer", "SHUTDOWN_ALREADY", "the producer is closed"))
        words = f"Can not find Message Queue for this topic, {topic}"
        try:
            route = await self.routes.route(topic, refresh=True)
        except NoRouteError as exc:
            raise NoRouteError(topic, exc.reason, words=words) from exc
        queues = RouteCache.publish_queues(topic, route)
        if not queues:
            raise NoRouteError(topic, "no writeable queue", words=words)
        return queues

    def _chosen_queue_attempts(self) -> int:
        """How many times a send to a chosen queue id is tried: once, as Java's send(msg, mq).  (A
        RequestProducer's request message is retried on the same queue after a transport error, as 4.9.3's
        async send of request(msg, mq) is.)"""
        return 1

    def _targets_of(self, topic: str, route: TopicRouteData) -> _Targets:
        targets = self._targets.get(topic)
        if targets is not None and targets.route is route:
            return targets
        queues = RouteCache.publish_queues(topic, route)
        addrs = {mq.broker_name: self._master_addr(route, mq) for mq in queues}
        by_queue_id: dict[int, list[MessageQueue]] = {}
        for mq in queues:
            by_queue_id.setdefault(mq.queue_id, []).append(mq)
        # a send to a chosen queue id (Java's send(msg, mq)) may name any queue its broker takes: 4.9.3's
        # msgCheck takes an id below max(writeQueueNums, readQueueNums), so a queue past the write queues but
        # still read is a target of such a send on the brokers the publish queues are on (not of a plain send)
        have = {(mq.broker_name, mq.queue_id) for mq in queues}
        for qd in sorted(route.queue_datas, key=attrgetter("broker_name")):
            if qd.broker_name in addrs:
                for queue_id in range(max(qd.write_queue_nums, qd.read_queue_nums)):
                    if (qd.broker_name, queue_id) not in have:
                        mq = MessageQueue(topic, qd.broker_name, queue_id)
                        by_queue_id.setdefault(queue_id, []).append(mq)
        targets = self._targets[topic] = _Targets(route, queues, addrs, by_queue_id)
        return targets

    @staticmethod
    def _queues_with_id(targets: _Targets, queue_id: int, broker_name: str | None = None
                        ) -> list[MessageQueue]:
        """Where a send to *queue_id* may go (Java's send(msg, mq) sends any id, the broker judges it): the
        queues with that id (see :meth:`_targets_of`), and for a negative id a queue of each broker the
        topic's publish queues are on, where the broker picks one of its write queues (4.9.3's
        SendMessageProcessor: randomQueueId) and answers which; only *broker_name*'s when given (a send to
        a MessageQueue)."""
        queues = targets.by_queue_id.get(queue_id)
        if queues is None and queue_id < 0 and targets.queues:
            topic = targets.queues[0].topic
            names = dict.fromkeys(q.broker_name for q in targets.queues)
            queues = [MessageQueue(topic, name, queue_id) for name in names]
        if queues and broker_name is not None:
            queues = [q for q in queues if q.broker_name == broker_name]
        return queues or []

    def _compressed(self, body: bytes) -> tuple[bytes, int]:
        """(body, sysFlag) as the Java producer's tryToCompressMessage leaves them: a body of
        compress_msg_body_over_howmuch bytes or more zlib-compressed and flagged COMPRESSED."""
        if len(body) >= self.compress_msg_body_over_howmuch:
            return zlib.compress(body, self.compress_level), _COMPRESSED
        return body, 0

    def _header(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int, sys_flag: int = 0
                ) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.group, topic=topic, default_topic=AUTO_CREATE_TOPIC,
            default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS, queue_id=queue_id, sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000), flag=flag, properties=properties or None,
            reconsume_times=0, unit_mode=False, batch=batch)

    def _ext_fields_v2(self, topic: str, queue_id: int, properties: str, batch: bool, flag: int,
                       sys_flag: int = 0) -> dict[str, str]:
        """``self._header(...).to_ext_fields_v2()`` written out: the same dict (same keys, values and
        order, a unit test compares them) without building and walking a 13-field frozen dataclass per send.
        Only cold paths build it per send (bodies of 16 KiB and more); the usual send goes through the frame
        template it makes (:meth:`_frame_template`)."""
        ext = {"a": self.group, "b": topic, "c": AUTO_CREATE_TOPIC, "d": _DEFAULT_QUEUE_NUMS_TEXT, "e": str(queue_id),
               "f": str(sys_flag), "g": str(int(time.time() * 1000)), "h": str(flag)}
        if properties:
            ext["i"] = properties
        ext["j"] = "0"
        ext["k"] = "false"
        ext["m"] = "true" if batch else "false"
        return ext

    def _frame_template(self, topic: str, queue_id: int, batch: bool, flag: int, code: int,
                        with_properties: bool, sys_flag: int = 0) -> JsonRequestTemplate:
        """The template of the request frames :meth:`_ext_fields_v2`'s extFields make: everything but the
        born timestamp ("g") and the properties ("i", when there are any) quoted once per queue."""
        key = (self.group, topic, queue_id, batch, flag, code, with_properties, sys_flag)
        template = self._frame_templates.get(key)
        if template is None:
            if len(self._frame_templates) >= 4096:
                self._frame_templates.clear()
            ext = self._ext_fields_v2(topic, queue_id, "-" if with_properties else "", batch, flag, sys_flag)
            template = self._frame_templates[key] = JsonRequestTemplate(
                code, ext, ("g", "i") if with_properties else ("g",))
        return template

    @staticmethod
    def _master_addr(route: TopicRouteData, mq: MessageQueue) -> str:
        bd = route.broker(mq.broker_name)
        addr = bd.master_addr() if bd is not None else None
        if addr is None:
            raise NoRouteError(mq.topic, f"broker {mq.broker_name} has no master")
        return addr

    @staticmethod
    def _result(response: RemotingCommand, msg_id: str, mq: MessageQueue) -> SendResult:
        ext = response.ext_fields
        if response.code == _SUCCESS:  # the usual answer: the queue asked for, a decimal offset
            queue_id_text = ext.get("queueId")
            offset_text = ext.get("queueOffset")
            if (queue_id_text is not None and offset_text is not None and queue_id_text.isdecimal()
                    and int(queue_id_text) == mq.queue_id):
                return _new_send_result("SEND_OK", msg_id, ext.get("msgId", ""), mq, int(offset_text),
                                        ext.get("MSG_REGION") or DEFAULT_REGION_ID, ext.get("TRACE_ON") != "false")
        status = _SEND_STATUS.get(response.code)
        if status is None:
            raise broker_error_for(response.code, response.remark)
        queue_id = int(ext.get("queueId", mq.queue_id))
        return SendResult(status, msg_id, ext.get("msgId", ""),
                          mq if queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, queue_id),
                          int(ext.get("queueOffset", "-1")), ext.get("MSG_REGION") or DEFAULT_REGION_ID,
                          ext.get("TRACE_ON") != "false")

    async def send_batch(self, topic: str, messages: list[OutgoingMessage], *,
                         queue_id: int | None = None, timeout_s: float | None = None,
                         message_queue: MessageQueue | None = None) -> SendResult:
        """Send messages of one topic as one batch; ``msg_id`` holds their UNIQ_KEYs joined by commas.
        *queue_id*, *timeout_s* and *message_queue*: as :meth:`send`'s (Java's send(msgs, mq, timeout)).
        A batch whose encoded body is over ``max_message_size`` is refused, not split (as 4.9.3)."""
        if not messages:
            raise ValueError("a batch needs at least one message")
        self._check(topic, None)
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        problem = _batch_problem(topic, messages, self.max_message_size)  # as Java's DefaultMQProducer.batch
        if problem is not None:
            raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL, f"Failed to initiate the MessageBatch: {problem}")
        keys_text = new_uniq_keys(len(messages))
        body = _uniform_batch_body(messages, keys_text)
        if body is None:
            # (only here can a message carry properties of its own, a UNIQ_KEY among them, which it keeps)
            keys = [m.properties.get(PropertyName.UNIQ_KEY) or k for m, k in zip(messages, keys_text.split(","))]
            keys_text = ",".join(keys)
            body = encode_batch([BatchEntry(m.body, _property_text(m, k), m.flag) for m, k in zip(messages, keys)])
        batch_properties = _BATCH_PROPERTIES[_waits_store(messages[0])]  # _batch_problem held the others' the same
        if self.trace is None:
            return await self._send(topic, _SEND_BATCH_MESSAGE, body, batch_properties, keys_text, batch=True,
                                    queue_id=queue_id, flag=0, timeout_s=timeout_s, broker_name=broker_name)
        began_ms = [0]
        sending = self._send(topic, _SEND_BATCH_MESSAGE, body, batch_properties, keys_text, batch=True,
                             queue_id=queue_id, flag=0, began_ms=began_ms, timeout_s=timeout_s,
                             broker_name=broker_name)
        # one Pub for the batch, as 4.9.3 traces a MessageBatch: no tags or keys, the ids joined by commas
        return await self.trace.pub(sending, topic, len(body), None, None, None, began_ms=began_ms)

    async def _send(self, topic: str, code: int, body: bytes, properties: str, msg_id: str, *, batch: bool,
                    queue_id: int | None, flag: int, sys_flag: int = 0, began_ms: list[int] | None = None,
                    retry_fields: dict[str, str] | None = None, timeout_s: float | None = None,
                    broker_name: str | None = None) -> SendResult:
        """Send with retries (none for a chosen *queue_id*, but see :meth:`_chosen_queue_attempts`), on
        *broker_name*'s queue only when given (a send to a MessageQueue);
        *retry_fields* (:func:`_retry_header_fields`') go into every attempt's header; *timeout_s* bounds the
        send instead of the producer's timeout.
        *began_ms* (a traced send's): its one item set to the wall-clock ms at which each attempt's request
        starts, so the trace's Pub times the attempt that answered, not the failed ones before it (Java's
        SendMessageTraceHookImpl wraps each sendKernelImpl call).

        A batch's encoded body is measured against maxMessageSize here (Validators.checkMessage of the
        MessageBatch); a single message's was measured raw by :meth:`_check`, before compression, as Java's
        sendDefaultImpl does: a compressed body that came out longer (incompressible data) still goes out
        and the broker, which may allow more, decides."""
        if batch and len(body) > self.max_message_size:
            raise MessageIllegalError(ResponseCode.MESSAGE_ILLEGAL,
                                      f"the message body size over max value, MAX: {self.max_message_size}")
        last_error: Exception | None = None
        failed_broker: str | None = None
        targets: _Targets | None = None
        mq: MessageQueue | None = None
        known = True
        # the timeout bounds the whole send, as sendDefaultImpl's: a retry gets what is left of it, and
        # none starts once it is spent (a broker that never answers is not waited for once per retry)
        if timeout_s is None:
            timeout_s = self.timeout_s
        deadline = time.monotonic() + timeout_s
        send_timeout_s = timeout_s
        # the broker of each failed try, in order (sendDefaultImpl's brokersSent), added to on failure only
        brokers_sent: tuple[str, ...] = ()
        # a chosen queue is sent to once, as Java's send(msg, mq) (one sendKernelImpl, no retry on another
        # broker): only the plain send retries (sendDefaultImpl's retryTimesWhenSendFailed)
        for attempt in range(self.retry_times + 1 if queue_id is None else self._chosen_queue_attempts()):
            if attempt > 0 and deadline <= time.monotonic():
                raise send_call_timeout(queue_id) from last_error
            # a fresh cached route without a coroutine (the usual case), else the route cache's full path; a
            # retry goes on with the route of the attempt before, not the name servers' (sendDefaultImpl's
            # retries go on with the TopicPublishInfo it looked up once): a name server that hangs does not
            # take the time of a retry on another broker
            if targets is not None:
                route = targets.route
                timeout_s = deadline - time.monotonic()
            elif (fresh := self.routes.fresh_route(topic)) is None:
                route, known = await self.routes.publish_route(topic)
                # the look-up counts against the attempt's time (sendDefaultImpl's costTime, sendKernelImpl's
                # for a chosen queue): once it has spent the timeout, nothing is sent
                timeout_s = deadline - time.monotonic()
                if timeout_s <= 0:
                    raise send_call_timeout(queue_id) from last_error
            else:
                route = fresh
                known = True
            targets = self._targets_of(topic, route)
            queues = (targets.queues if queue_id is None
                      else self._queues_with_id(targets, queue_id, broker_name))
            if not queues:
                if queue_id is not None and targets.queues:
                    raise _not_a_target(topic, targets, queue_id, broker_name)
                raise NoRouteError(topic, "no writeable queue")
            if queue_id is not None and mq is not None and mq in queues:
                pass  # a chosen queue's retry goes to the same queue (see _chosen_queue_attempts)
            else:
                candidates = queues if failed_broker is None else (
                    [q for q in queues if q.broker_name != failed_broker] or queues)
                mq = candidates[next(self._next_queue) % len(candidates)]
            addr = targets.addrs[mq.broker_name]
            if began_ms is not None:
                began_ms[0] = int(time.time() * 1000)
            try:
                # the pool's connection, without pool.request's two coroutines per send while it stays open
                connection = self._connections.get(addr)
                if connection is None or connection.is_closed:
                    connection = self._connections[addr] = await self.pool.get(addr)
                if retry_fields is None and len(body) < self._template_body_limit:
                    # the frame from a per-queue template (the bytes encode_command would write for the
                    # command of _ext_fields_v2's extFields), numbered by the connection
                    born = str(int(time.time() * 1000))
                    template = self._frame_template(topic, mq.queue_id, batch, flag, code, bool(properties),
                                                    sys_flag)
                    encode = partial(template.encode, (born, properties) if properties else (born,), body)
                    response = await connection.request_encoded(encode, code, timeout_s)
                else:
                    ext = self._ext_fields_v2(topic, mq.queue_id, properties, batch, flag, sys_flag)
                    ext.update(retry_fields or {})
                    request = RemotingCommand.request(code, ext, body)
                    response = await connection.request(request, timeout_s)
                result = self._result(response, msg_id, mq)
            except LoopBoundError:
                raise  # a programming error (another loop's or a forked parent's connection): no retry
            except RemotingError as exc:
                last_error, failed_broker = exc, mq.broker_name
                brokers_sent += (mq.broker_name,)
                continue
            except BrokerError as error:
                if not error.retriable:
                    raise
                last_error, failed_broker = error, mq.broker_name
                brokers_sent += (mq.broker_name,)
                continue
            if not known:
                self.routes.invalidate(topic)
            return result
        if isinstance(last_error, (BrokerError, RemotingError)):
            if queue_id is not None:  # send(msg, mq): sendKernelImpl's exception as it is
                raise last_error
            # every try failed: sendDefaultImpl's "Send [n] times, still failed" (the last error's class too)
            cost_ms = int((time.monotonic() - deadline + send_timeout_s) * 1000)
            raise send_failed(last_error, topic, len(brokers_sent), cost_ms, brokers_sent) from last_error
        raise NoRouteError(topic, str(last_error))
