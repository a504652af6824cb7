"""The messages a producer sends, as they go on the wire: :class:`OutgoingMessage`, the client-generated
UNIQ_KEYs (:func:`new_uniq_key`, :func:`new_uniq_keys`), the property text of a message, the checks Java's
Validators and MessageBatch make before a send (topic, body, tags and properties, batches), a batch's body,
the topic and properties of a reply (:func:`reply_properties`) and :class:`SendResult`.  No I/O: the
:class:`~rocketstore.client.producer.Producer` sends what these make.

Each message gets a client-generated UNIQ_KEY (RocketMQ's MessageClientIDSetter layout: IP, pid, a random
instance word, ms since the start of the month, a counter; a forked child gets a pid and word of its own),
which is ``SendResult.msg_id``; the broker's offset message id is ``offset_msg_id``.

Per-message client CPU is part of every round trip, so these avoid per-message Python work where the bytes
allow: a batch's keys come from one struct pack and hex of their counters (a range: no int per key), the
usual batch (one tags value, flag and body length, no keys or user properties) is recognised in two
C-level passes over its messages and its body is one join of the bodies with the parts every entry
shares, the keys' counters then written in as four byte columns, without BatchEntry objects, a key or a
pack per entry; the usual message's property text is one str.format of a template.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
import struct
import time
from binascii import b2a_hex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from operator import attrgetter
from typing import Any, Protocol

from rocketstore.client.errors import ClientError, MessageIllegalError
from rocketstore.client.route import MessageQueue
from rocketstore.client.trace import DEFAULT_REGION_ID
from rocketstore.message.batch import BATCH_ENTRY_HEADER
from rocketstore.message.java_numbers import number_format_remark, parse_java_int
from rocketstore.message.names import NAME_CHARS, TOPIC_MAX_LENGTH
from rocketstore.message.properties import (
    PROPERTY_SEPARATOR,
    PropertyName,
    encode_properties,
    properties_problem,
    waits_store_msg_ok,
)
from rocketstore.message.system_topics import RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from rocketstore.remoting.codec import _quote_json
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.templates import _need_escapes

__all__ = ["REPLY_MESSAGE_FLAG", "REPLY_TOPIC_SUFFIX", "HasProperties", "OutgoingMessage", "SendResult",
           "new_uniq_key", "new_uniq_keys", "reply_properties", "topic_name_problem", "topic_problem"]

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


# plain ints: an IntEnum code takes the frame encoder's checked (slower) path
_SEND_MESSAGE_V2 = int(RequestCode.SEND_MESSAGE_V2)
_SEND_BATCH_MESSAGE = int(RequestCode.SEND_BATCH_MESSAGE)
_SEND_REPLY_MESSAGE_V2 = int(RequestCode.SEND_REPLY_MESSAGE_V2)
#: Java DefaultMQProducer.compressMsgBodyOverHowmuch: a body this long or longer is sent zlib-compressed
DEFAULT_COMPRESS_OVER = 4 * 1024
#: the Java producer's zipCompressLevel (system property rocketmq.message.compressLevel, 5)
DEFAULT_COMPRESS_LEVEL = 5
#: MSG_TYPE of a reply (Java's MixAll.REPLY_MESSAGE_FLAG); such a message goes out as SEND_REPLY_MESSAGE_V2
REPLY_MESSAGE_FLAG = "reply"
#: the reply topic of a cluster is "<cluster>" + this (MixAll.getReplyTopic)
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"
_PROPERTIES_LENGTH = struct.Struct(">h")
_COUNTER = itertools.count()
_IP = _ip_bytes()


def _fix() -> bytes:
    """The part every UNIQ_KEY of this process shares: the IP, the pid as Java's ``(short) pid`` writes it
    (its low 16 bits) and a random word where Java has its class loader's hash."""
    return _IP + struct.pack(">Hi", os.getpid() & 0xFFFF, random.getrandbits(31))


def _renew_fix() -> None:
    # a forked child (multiprocessing, a pre-fork server) inherits the parent's pid field, random word and
    # counter: without a part of its own it would make the parent's keys, the same ones within a millisecond
    global _FIX, _FIX_HEX
    _FIX = _fix()
    _FIX_HEX = _FIX.hex().upper()


_FIX = _fix()
_FIX_HEX = _FIX.hex().upper()
os.register_at_fork(after_in_child=_renew_fix)


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
    """*count* :func:`new_uniq_key` keys joined by commas (a batch's ``msg_id``): :func:`_keys_text` of a
    :func:`_new_key_block`."""
    if count < 1:
        return ""
    return _keys_text(*_new_key_block(count))


def _new_key_block(count: int) -> tuple[str, bytes]:
    """The UNIQ_KEYs of a batch of *count* (at least one) as the part they share (the fixed part and the
    time, hex) and their counters, four uppercase hex digits apiece (%04X's) back to back as ASCII bytes.
    The clock is read once (keys made within one ms share it anyway) and the counter advanced by *count*
    in one C-level call, which no other thread can take a value in the middle of (the keys of two batches
    made at once never overlap); the values taken are consecutive, so their low 16 bits are a range (two
    pieces when they wrap), packed and hexed without an int object per key."""
    head = f"{_FIX_HEX}{_month_ms():08X}"
    first = (next(islice(_COUNTER, count - 1, None)) - count + 1) & 0xFFFF
    end = first + count
    counters = range(first, end) if end <= 0x10000 else map(_LOW16, range(first, end))
    return head, b2a_hex(struct.pack(f">{count}H", *counters)).upper()


def _keys_text(head: str, counters: bytes) -> str:
    """The keys of a :func:`_new_key_block` joined by commas: the shared part, a placeholder and a comma
    repeated, each key's four counter digits then written over its placeholder as four byte columns
    (extended-slice assignments: no str per key)."""
    width = len(head) + 5  # a key and its comma
    text = bytearray((head + "0000,").encode() * (len(counters) // 4))
    at = len(head)
    text[at::width] = counters[0::4]
    text[at + 1::width] = counters[1::4]
    text[at + 2::width] = counters[2::4]
    text[at + 3::width] = counters[3::4]
    return text[:-1].decode()


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
        if props.get(PropertyName.MSG_TYPE) != REPLY_MESSAGE_FLAG:
            # (a reply gets no WAIT of its own: 4.9.3's createReplyMessage builds it with the bare Message())
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
#: tags -> the JSON text JsonRequestTemplate.encode writes for the usual properties with those tags, cut
#: where the key goes (opening quote included before, closing quote after), or () for tags whose properties
#: fastjson escapes otherwise (see _quoted_properties)
_QUOTED_PROPERTIES: dict[str | None, tuple[str, str] | tuple[()]] = {}


def _quoted_properties(tags: str | None, uniq_key: str) -> str | None:
    """``(_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).format(tags, uniq_key)`` as the JSON string
    JsonRequestTemplate.encode writes for it, quotes included (what its encode_quoted takes), without quoting
    and searching it per send: JSON quotes character by character and *uniq_key* (new_uniq_key's, hex) needs
    no escape, so the quoted text around the key is kept per tags.  None for tags whose properties need one
    of fastjson's own escapes (templates._need_escapes): the template then quotes the text itself."""
    parts = _QUOTED_PROPERTIES.get(tags)
    if parts is None:
        if len(_QUOTED_PROPERTIES) >= 1024:
            _QUOTED_PROPERTIES.clear()
        before, after = (_TAGGED_PROPERTIES if tags else _UNTAGGED_PROPERTIES).split("{1}")
        before, after = before.format(tags), after.format(tags)
        parts = () if _need_escapes((before, after)) else (_quote_json(before)[:-1], _quote_json(after)[1:])
        _QUOTED_PROPERTIES[tags] = parts
    if not parts:
        return None
    return parts[0] + uniq_key + parts[1]  # type: ignore[misc]


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


_INT_ONLY = {int}


def _flags_not_ints(messages: list[OutgoingMessage]) -> bool:
    """Whether a flag of *messages* is no int proper (a bool, which struct packs as 1; Java's
    Message.setFlag takes an int, and :meth:`Producer.send` refuses one), column-wise."""
    return set(map(type, map(_message_flag, messages))) != _INT_ONLY


#: a message's fields besides its body, as one tuple: equal tuples are equal fields, the flag's class
#: included (a bool or float flag equal to an int is not one)
_message_shape = attrgetter("tags", "keys", "properties", "flag", "flag.__class__", "body.__class__")
#: the usual batch's columns: (bodies, tags, flag, body length)
_Uniform = tuple[list[bytes], str | None, int, int]


def _uniform_batch(messages: list[OutgoingMessage]) -> _Uniform | None:
    """(bodies, tags, flag, body length) of the usual batch: every message with the same tags, flag (an int
    proper; one equal to it that is not, a bool or a float, goes the other way, where
    :func:`_flags_not_ints` refuses it) and body length, and no keys or user properties.  None for any
    other batch, one with a body without a length or that is not bytes too (the checks of
    :func:`_batch_problem` name it; the general path copies a buffer's bytes).
    Two C-level passes: the bodies, and every message's other fields as one tuple compared with the
    first's."""
    bodies = list(map(_message_body, messages))
    try:
        lengths = list(map(len, bodies))
    except TypeError:
        return None
    shapes = list(map(_message_shape, messages))
    first = shapes[0]
    tags, keys, properties, flag, flag_class, body_class = first
    count = len(shapes)
    body_length = lengths[0]
    # (bytes bodies only: a memoryview's len() may count items, not bytes; the general path copies it)
    if (keys or properties or flag_class is not int or body_class is not bytes or shapes.count(first) != count
            or lengths.count(body_length) != count):
        return None
    return bodies, tags, flag, body_length


def _uniform_batch_problem(uniform: _Uniform, max_message_size: int) -> str | None:
    """:func:`_batch_problem` of the usual batch (:func:`_uniform_batch`'s columns) to a topic that is no
    retry topic: its one body length and tags checked once."""
    _, tags, _, body_length = uniform
    if not body_length:
        return "the message body length is zero"
    if body_length > max_message_size:
        return f"the message body size over max value, MAX: {max_message_size}"
    if tags and PROPERTY_SEPARATOR in tags:
        return properties_problem({PropertyName.TAGS: tags})
    return None


def _block_batch_body(uniform: _Uniform, head: str, counters: bytes) -> bytes | None:
    """``encode_batch`` of the usual batch (:func:`_uniform_batch`'s columns) with the keys of a
    :func:`_new_key_block` (*head*, *counters*).  Its entries differ in body and key counter only: the body
    is one join of the bodies with what lies between two of them (the parts every entry shares, from
    _entry_parts, the key's counter as a placeholder), the counters then written over the placeholders
    as four byte columns (extended-slice assignments): no BatchEntry, property string, key or struct pack
    per message.  None when the properties do not fit their length word.  A unit test holds this equal
    to encode_batch."""
    bodies, tags, flag, body_length = uniform
    parts = _entry_parts(tags, flag, body_length)
    if parts is None:
        return None
    header, before_key, between, last = parts
    key_start = before_key + head.encode()
    placeholder = key_start + b"0000"
    body = bytearray(header)
    body += (placeholder + between).join(bodies)
    body += placeholder
    body += last
    stride = len(header) + body_length + len(placeholder) + len(last)  # one entry
    at = len(header) + body_length + len(key_start)  # its key's counter
    body[at::stride] = counters[0::4]
    body[at + 1::stride] = counters[1::4]
    body[at + 2::stride] = counters[2::4]
    body[at + 3::stride] = counters[3::4]
    return bytes(body)


def _uniform_batch_body(messages: list[OutgoingMessage], keys_text: str) -> bytes | None:
    """:func:`_block_batch_body` of *messages* with the keys of *keys_text* (:func:`new_uniq_keys`'),
    or None for any other batch (the caller goes through encode_batch) or keys not made so (not one per
    message, not sharing their part before the counter)."""
    uniform = _uniform_batch(messages)
    if uniform is None:
        return None
    keys = keys_text.split(",")
    head = keys[0][:-4]
    if len(keys) != len(messages) or any(len(key) != _KEY_CHARS or key[:-4] != head for key in keys):
        return None
    counters = "".join(key[-4:] for key in keys).encode()
    if len(counters) != 4 * len(keys):
        return None
    return _block_batch_body(uniform, head, counters)


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


class _SendResultSlots:
    """SendResult's slots without its frozen ``__setattr__`` (see remoting.command._CommandSlots): filled
    with plain attribute stores, then made a SendResult by setting ``__class__`` (the same slot layout)."""

    __slots__ = SendResult.__slots__


if SendResult.__slots__ != ("status", "msg_id", "offset_msg_id", "message_queue", "queue_offset", "region_id",
                            "trace_on"):  # _new_send_result must set every field
    raise AssertionError(f"SendResult fields changed: {SendResult.__slots__}")


def _new_send_result(status: str, msg_id: str, offset_msg_id: str, message_queue: MessageQueue,
                     queue_offset: int, region_id: str, trace_on: bool) -> SendResult:
    """``SendResult(...)`` filling the slots directly (as remoting's new_command does): the frozen
    dataclass's ``__init__`` goes through ``object.__setattr__`` by name, a cost paid once per send."""
    result: Any = object.__new__(_SendResultSlots)
    result.status = status
    result.msg_id = msg_id
    result.offset_msg_id = offset_msg_id
    result.message_queue = message_queue
    result.queue_offset = queue_offset
    result.region_id = region_id
    result.trace_on = trace_on
    result.__class__ = SendResult
    return result  # type: ignore[no-any-return]
