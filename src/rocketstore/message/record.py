"""The commitlog record: the ONE definition of its byte layout, its encoder and its one-record decoders.

A record (all integers big-endian; hosts are IP bytes + int port, 8 bytes for IPv4, 20 for IPv6)::

    +0  TOTALSIZE    int     whole record, this field included
    +4  MAGICCODE    int     0xDAA320A7 (message) / 0xCBD43194 (end-of-file blank)
    +8  BODYCRC      int     zlib CRC-32 of the stored body with the sign bit cleared
    +12 QUEUEID      int
    +16 FLAG         int
    +20 QUEUEOFFSET  long    entry number in the consume queue (0 for PREPARED / ROLLBACK)
    +28 PHYSICALOFF  long    commitlog offset of this record
    +36 SYSFLAG      int     see SysFlag
    +40 BORNTIME     long
    +48 BORNHOST     8 | 20
        STORETIME    long    +56 with an IPv4 born host
        STOREHOST    8 | 20
        RECONSUME    int
        PREPAREDOFF  long
        BODYLENGTH   int     +84 for IPv4 / IPv4
        BODY         BODYLENGTH bytes
        TOPICLENGTH  byte    (<= 127)
        TOPIC        UTF-8
        PROPLENGTH   short   (<= 32767)
        PROPERTIES   UTF-8, see rocketstore.message.properties

The end-of-file blank record is 8 bytes: int bytes-left-in-segment, int 0xCBD43194; the rest of the segment
is left as zeros.

Two modules beside this one share its private layout helpers: :mod:`rocketstore.message.batch_draft` (a
batch's records drafted column-wise) and :mod:`rocketstore.message.record_decode` (a pull body's records
decoded in runs).  This module imports only the errors, arguments, host, names and properties modules of this package (and
message_id lazily), never those two.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from rocketstore.errors import (
    InvalidTopicError,
    MessageDecodeError,
    MessageError,
    MessageFieldError,
    MessageTooLargeError,
    PropertiesTooLargeError,
)
from rocketstore.message.arguments import int_argument
from rocketstore.message.host import HostAddress
from rocketstore.message.java_utf8 import java_utf8
from rocketstore.message.names import NAME_CHARS, TOPIC_MAX_LENGTH
from rocketstore.message.properties import HasTagsAndKeys, PropertyName, encode_properties, parse_properties

__all__ = [
    "BLANK_MAGIC",
    "BLANK_RECORD",
    "BLANK_RECORD_BYTES",
    "MESSAGE_MAGIC",
    "MIN_RECORD_BYTES",
    "PHYSICAL_OFFSET_POS",
    "PLAIN_WRITE_HEADER",
    "QUEUE_OFFSET_POS",
    "SYS_FLAG_POS",
    "TOTAL_SIZE_MAGIC",
    "DispatchInfo",
    "Message",
    "RecordDraft",
    "StoredMessage",
    "SysFlag",
    "body_crc",
    "decode_dispatch_info",
    "decode_record",
    "draft_message",
    "draft_record",
    "encode_record",
    "header_layout",
    "host_bytes",
    "host_flags",
    "record_size",
    "store_timestamp_position",
    "v4_run_formats",
    "validate_topic",
    "write_record",
]

MESSAGE_MAGIC: Final = -626843481  # 0xDAA320A7 as a Java int
BLANK_MAGIC: Final = -875286124  # 0xCBD43194 as a Java int

#: TOTALSIZE and MAGICCODE, the two ints every record (message or blank) starts with.
TOTAL_SIZE_MAGIC: Final = struct.Struct(">ii")
BLANK_RECORD: Final = TOTAL_SIZE_MAGIC
BLANK_RECORD_BYTES: Final = 8
#: A record with empty body, 1-byte topic and no properties between two IPv4 hosts.
MIN_RECORD_BYTES: Final = 92

QUEUE_OFFSET_POS: Final = 20
PHYSICAL_OFFSET_POS: Final = 28
SYS_FLAG_POS: Final = 36
_BORN_HOST_POS: Final = 48

_PROP_LEN = struct.Struct(">h")
_INT = struct.Struct(">i")


class SysFlag:
    """Bits of the record's SYSFLAG (``MessageSysFlag``)."""

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_NOT_TYPE = 0x0
    TRANSACTION_PREPARED_TYPE = 0x4
    TRANSACTION_COMMIT_TYPE = 0x8
    TRANSACTION_ROLLBACK_TYPE = 0xC
    TRANSACTION_MASK = 0xC
    BORNHOST_V6 = 0x10
    STOREHOST_V6 = 0x20

    @staticmethod
    def transaction_type(sys_flag: int) -> int:
        return sys_flag & SysFlag.TRANSACTION_MASK

    @staticmethod
    def gets_queue_entry(sys_flag: int) -> bool:
        """NOT and COMMIT records are dispatched to a consume queue; PREPARED and ROLLBACK are not."""
        t = sys_flag & SysFlag.TRANSACTION_MASK
        return t == 0 or t == SysFlag.TRANSACTION_COMMIT_TYPE


def _header_format(born_v6: bool, store_v6: bool, *, packed_hosts: bool = False) -> str:
    """The struct format of TOTALSIZE through BODYLENGTH: a host is IP bytes + int port, or with
    *packed_hosts* one bytes field of both (the writer packs a host's 8 or 20 bytes once, not per record)."""
    if packed_hosts:
        born = "20s" if born_v6 else "8s"
        store = "20s" if store_v6 else "8s"
    else:
        born = "16si" if born_v6 else "4si"
        store = "16si" if store_v6 else "4si"
    return ">iiiiiqqiq" + born + "q" + store + "iqi"


def header_layout(born_v6: bool, store_v6: bool) -> struct.Struct:
    """The fixed part of a record, TOTALSIZE through BODYLENGTH, for the given host families."""
    return struct.Struct(_header_format(born_v6, store_v6))


_HEADERS: Final = {
    (False, False): header_layout(False, False),
    (True, False): header_layout(True, False),
    (False, True): header_layout(False, True),
    (True, True): header_layout(True, True),
}
_HEADER_V4: Final = _HEADERS[(False, False)]
#: The same bytes as ``_HEADERS``, for writing: hosts as packed (IP, port) fields, see :func:`host_bytes`.
#: Indexed by the sysFlag's host bits >> 4 (0: both IPv4, 1: IPv6 born host, 2: IPv6 store host, 3: both).
_WRITE_HEADERS: Final = tuple(struct.Struct(_header_format(bool(bits & 1), bool(bits & 2), packed_hosts=True))
                              for bits in range(4))
#: The usual record's fixed part (IPv4 hosts; FLAG, SYSFLAG, RECONSUMETIMES and PREPAREDOFFSET all 0) with
#: those four as pad bytes, which struct writes as zeros: 12 fields to pack instead of 17.  A draft holding
#: it carries the same 13 items; the writer packs TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, QUEUEOFFSET,
#: PHYSICALOFFSET, BORNTIMESTAMP, BORNHOST, STORETIMESTAMP, STOREHOST and BODYLENGTH.
PLAIN_WRITE_HEADER: Final = struct.Struct(">iiii4xqq4xq8sq8s12xi")


def v4_run_formats(body_len: int, topic_len: int, props_len: int) -> tuple[str, str]:
    """Two views of a record between IPv4 hosts with these lengths, for reading runs of them (record_decode):
    the bytes that records of one layout share (TOTALSIZE + MAGICCODE, SYSFLAG, BORNHOST, STOREHOST,
    BODYLENGTH, and TOPICLENGTH + TOPIC + PROPERTIESLENGTH) as six bytes fields, and what differs between
    them (BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, BORNTIMESTAMP, STORETIMESTAMP,
    RECONSUMETIMES, PREPAREDOFFSET, BODY, PROPERTIES) as eleven fields; the rest are pad bytes."""
    shared = f">8s28x4s8x8s8x8s12x4s{body_len}x{topic_len + 3}s"  # (stops before PROPERTIES)
    differing = f">8xiiiqq4xq8xq8xiq4x{body_len}s{topic_len + 3}x{props_len}s"
    return shared, differing


def store_timestamp_position(sys_flag: int) -> int:
    """Byte position of STORETIMESTAMP inside a record with this sysFlag."""
    return _BORN_HOST_POS + (20 if sys_flag & SysFlag.BORNHOST_V6 else 8)


def record_size(body_bytes: int, topic_bytes: int, properties_bytes: int, born_v6: bool = False,
                store_v6: bool = False) -> int:
    return 91 + body_bytes + topic_bytes + properties_bytes + (12 if born_v6 else 0) + (12 if store_v6 else 0)


def body_crc(body: bytes) -> int:
    """CRC-32 of the body with the sign bit cleared, as the record stores it."""
    return zlib.crc32(body) & 0x7FFFFFFF


_VALID_TOPICS: dict[str, bytes] = {}


def validate_topic(topic: str) -> bytes:
    """UTF-8 bytes of a valid topic name, or InvalidTopicError (length 1..127, ``[%|a-zA-Z0-9_-]``)."""
    cached = _VALID_TOPICS.get(topic)
    if cached is not None:
        return cached
    if not isinstance(topic, str) or not topic:
        raise InvalidTopicError(str(topic), "a topic name must be a non-empty string")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise InvalidTopicError(topic, f"{len(topic)} characters, at most {TOPIC_MAX_LENGTH} allowed")
    if not NAME_CHARS.issuperset(topic):
        raise InvalidTopicError(topic, "only the characters %|a-zA-Z0-9_- are allowed")
    encoded = topic.encode("ascii")
    if len(_VALID_TOPICS) < 65536:
        _VALID_TOPICS[topic] = encoded
    return encoded


def body_type_error(body: object) -> TypeError | None:
    """The TypeError for a message body that is not bytes-like (a str, say: ``send("TopicA", "hello")``),
    naming its type and, for a str, the fix; None for a bytes-like one."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return None
    hint = ": encode a str first, e.g. body.encode()" if isinstance(body, str) else ""
    return TypeError(f"a message body must be bytes (or bytearray, memoryview), not {type(body).__name__}{hint}")


@dataclass(frozen=True, slots=True)
class Message(HasTagsAndKeys):
    """A message as a producer hands it to the store.

    ``properties`` holds TAGS, KEYS, UNIQ_KEY and user properties; the store serialises them in Java
    HashMap order.  ``store_timestamp`` is normally left None (the store stamps it); replaying a known
    history (tests, migration) may fix it.  ``store_host`` None means the store's own address.
    """

    topic: str
    body: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostAddress | None = None
    store_host: HostAddress | None = None
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    store_timestamp: int | None = None

    @classmethod
    def create(cls, topic: str, body: bytes | bytearray | memoryview = b"", *, tags: str | None = None,
               keys: str | list[str] | tuple[str, ...] | None = None, uniq_key: str | None = None,
               properties: dict[str, str] | None = None, **fields: object) -> Message:
        """Build a message the way a RocketMQ client does: tags, keys (joined by a space) and user properties.

        A ``queue_id`` must be an int (a numpy integer is taken as its value): a bool or str is a TypeError."""
        if "queue_id" in fields and fields["queue_id"].__class__ is not int:
            fields["queue_id"] = int_argument("queue_id", fields["queue_id"])
        props: dict[str, str] = {}
        if properties:
            props.update(properties)
        if tags is not None:
            props[PropertyName.TAGS] = tags
        if keys is not None:
            props[PropertyName.KEYS] = keys if isinstance(keys, str) else PropertyName.KEY_SEPARATOR.join(keys)
        if uniq_key is not None:
            props[PropertyName.UNIQ_KEY] = uniq_key
        try:
            body = bytes(body)
        except TypeError as e:  # (a try costs nothing until it raises) a str: bytes() names no fix
            raise body_type_error(body) or e from None
        return cls(topic, body, props, **fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class StoredMessage(HasTagsAndKeys):
    """A record read back from the commitlog (RocketMQ's MessageExt)."""

    store_size: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: HostAddress
    store_timestamp: int
    store_host: HostAddress
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties_string: str

    @property
    def properties(self) -> dict[str, str]:
        return parse_properties(self.properties_string)


    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PropertyName.UNIQ_KEY)

    @property
    def msg_id(self) -> str:
        """The offset message id: store host + commitlog offset, upper-case hex."""
        from rocketstore.message.message_id import encode_offset_message_id

        return encode_offset_message_id(self.store_host, self.commit_log_offset)


class DispatchInfo(NamedTuple):
    """What the dispatcher needs from a record, read without copying its body (a NamedTuple: one per
    record on the dispatch hot path)."""

    commit_log_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    sys_flag: int
    store_timestamp: int
    properties_string: str


#: A record ready to be placed: everything but QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP, which the
#: writer fills in under its lock.  A plain tuple (not a dataclass) because it is built once per put:
#: (header struct, total size, body crc, queue id, flag, sys flag, born ts, born host bytes, store host
#:  bytes, reconsume times, prepared offset, body length, tail = body + topic + properties).
#: Callers read only its size (``draft[1]``), queue id (``draft[3]``) and sys flag (``draft[5]``).
RecordDraft = tuple

_TOPIC_LEN_BYTES = [bytes([n]) for n in range(128)]
#: queue id, flag, sys flag, reconsume times (ints), born timestamp, prepared offset (longs): packing them
#: is the range check (one C call instead of a dozen comparisons); the bytes are thrown away.
_FIELD_RANGES: Final = struct.Struct(">iiiiqq")
_pack_field_ranges = _FIELD_RANGES.pack
#: topic -> TOPICLENGTH byte + topic bytes, for topics that passed validate_topic
_TOPIC_PARTS: dict[str, bytes] = {}
#: PROPLENGTH as a record stores it, for the usual lengths (a list index instead of a to_bytes call)
_PROPS_LEN_BYTES: Final = [n.to_bytes(2, "big") for n in range(4096)]
_crc32 = zlib.crc32
_join = b"".join


def host_bytes(host: HostAddress) -> bytes:
    """A host as a record stores it: the IP bytes, then the port as an int (8 bytes for IPv4, 20 for IPv6)."""
    return host.ip + _INT.pack(host.port)


def _topic_part(topic: str) -> bytes:
    """TOPICLENGTH + TOPIC of a record, or InvalidTopicError (see validate_topic)."""
    encoded = validate_topic(topic)
    part = _TOPIC_LEN_BYTES[len(encoded)] + encoded
    if len(_TOPIC_PARTS) < 65536:
        _TOPIC_PARTS[topic] = part
    return part


def host_flags(sys_flag: int, born: bytes, store: bytes) -> tuple[int, int]:
    """*sys_flag* (its host bits clear) with BORNHOST_V6 / STOREHOST_V6 set for the hosts (as
    :func:`host_bytes`) that are IPv6, and the bytes those add to the record (12 each)."""
    extra = 0
    if len(born) == 20:
        sys_flag |= SysFlag.BORNHOST_V6
        extra += 12
    if len(store) == 20:
        sys_flag |= SysFlag.STOREHOST_V6
        extra += 12
    return sys_flag, extra


def _check_record_fields(queue_id: int, flag: int, sys_flag: int, reconsume_times: int, born_timestamp: int,
                        prepared_offset: int) -> None:
    """MessageFieldError when an int field is outside Java's int range or a long field outside long's."""
    try:
        _pack_field_ranges(queue_id, flag, sys_flag, reconsume_times, born_timestamp, prepared_offset)
    except struct.error as exc:
        raise MessageFieldError("an int field is outside Java's int range or a long field outside long's: "
                                f"{exc}") from exc


def draft_message(message: Message, properties: bytes, born: bytes, store: bytes,
                  max_message_bytes: int = 0x7FFFFFFF) -> RecordDraft:
    """Validate and pre-encode *message*, given its properties string as UTF-8 and both hosts as
    :func:`host_bytes` (the put path prepares those once per host, not per record).

    Raises, checking in this order, InvalidTopicError, PropertiesTooLargeError, MessageTooLargeError and
    MessageFieldError (an int field outside Java's int range, a long field outside long's), and builds
    nothing then.  ``MessageStore.put`` (store/writes.py) writes these steps out: keep the two in step."""
    topic_part = _TOPIC_PARTS.get(message.topic)
    if topic_part is None:
        topic_part = _topic_part(message.topic)
    props_len = len(properties)
    if props_len > 32767:
        raise PropertiesTooLargeError(props_len)
    body = message.body
    if body.__class__ is not bytes:
        # a buffer's len() may count items, not bytes (a memoryview of ints): its bytes, or TypeError for
        # something that is no buffer (a str, None, an int)
        body = bytes(memoryview(body))
    body_len = len(body)
    total = 90 + body_len + len(topic_part) + props_len  # 91 bytes of fixed fields, TOPICLENGTH in topic_part
    sys_flag = message.sys_flag & ~0x30
    if len(born) + len(store) != 16:  # an IPv6 host
        sys_flag, extra = host_flags(sys_flag, born, store)
        total += extra
    if total > max_message_bytes:
        raise MessageTooLargeError(total, max_message_bytes)
    queue_id = message.queue_id
    flag = message.flag
    born_ts = message.born_timestamp
    reconsume = message.reconsume_times
    prepared = message.prepared_transaction_offset
    if flag or sys_flag or reconsume or prepared or not (0 <= queue_id <= 0x7FFFFFFF and
                                                        -0x8000000000000000 <= born_ts <= 0x7FFFFFFFFFFFFFFF):
        # the usual message has these at 0 and a sane queue id and born time: check the rest only if not
        _check_record_fields(queue_id, flag, sys_flag, reconsume, born_ts, prepared)
        header = _WRITE_HEADERS[sys_flag >> 4 & 3]
    else:
        header = PLAIN_WRITE_HEADER  # IPv4 hosts (no host bit in sys_flag), the four fields 0
    return (header, total, _crc32(body) & 0x7FFFFFFF, queue_id, flag, sys_flag,
            born_ts, born, store, reconsume, prepared, body_len,
            _join((body, topic_part, _PROPS_LEN_BYTES[props_len] if props_len < 4096 else props_len.to_bytes(2, "big"),
                   properties)))


def draft_record(message: Message, properties_string: str | None = None, *, store_host: HostAddress,
                 born_host: HostAddress, max_message_bytes: int = 0x7FFFFFFF) -> RecordDraft:
    """Validate and pre-encode *message*; raises InvalidTopicError, PropertiesTooLargeError,
    MessageTooLargeError or MessageFieldError (and builds nothing then).  See :func:`draft_message` for
    the put path's cheaper form."""
    if _TOPIC_PARTS.get(message.topic) is None:
        _topic_part(message.topic)  # a bad topic is reported before anything else
    if properties_string is None:
        properties_string = encode_properties(message.properties)
    return draft_message(message, properties_string.encode("utf-8"), host_bytes(born_host),
                         host_bytes(store_host), max_message_bytes)


def write_record(buf: bytearray | memoryview | mmap.mmap, pos: int, draft: RecordDraft, queue_offset: int,
                 commit_log_offset: int, store_timestamp: int) -> None:
    """Lay *draft* down at *pos* of *buf* with its final offsets and store time."""
    (header, total, crc, queue_id, flag, sys_flag, born_ts, born, store, reconsume, prepared, body_len,
     tail) = draft
    if header is PLAIN_WRITE_HEADER:
        header.pack_into(buf, pos, total, MESSAGE_MAGIC, crc, queue_id, queue_offset, commit_log_offset, born_ts,
                         born, store_timestamp, store, body_len)
    else:
        header.pack_into(buf, pos, total, MESSAGE_MAGIC, crc, queue_id, flag, queue_offset, commit_log_offset,
                         sys_flag, born_ts, born, store_timestamp, store, reconsume, prepared, body_len)
    buf[pos + header.size : pos + total] = tail


def encode_record(message: Message, properties_string: str | None = None, *,
                  store_host: HostAddress, born_host: HostAddress, store_timestamp: int = 0,
                  queue_offset: int = 0, commit_log_offset: int = 0,
                  max_message_bytes: int = 0x7FFFFFFF) -> tuple[bytearray, int]:
    """Encode *message* as a whole commitlog record; returns (record, sysFlag with host bits set)."""
    draft = draft_record(message, properties_string, store_host=store_host, born_host=born_host,
                         max_message_bytes=max_message_bytes)
    out = bytearray(draft[1])
    write_record(out, 0, draft, queue_offset, commit_log_offset, store_timestamp)
    return out, draft[5]


#: Decoded host addresses, shared by every record (here and in record_decode): a pull answers dozens of
#: records from one or two hosts, and HostAddress's validating constructor costs more than the lookup.
_HOSTS: dict[tuple[bytes, int], HostAddress] = {}
_CACHE_LIMIT: Final = 4096


def _host(ip: bytes, port: int) -> HostAddress:
    """The (cached) HostAddress of *ip*, *port*; MessageError when the port is out of range."""
    key = (ip, port)
    host = _HOSTS.get(key)
    if host is None:
        host = HostAddress(ip, port)
        if len(_HOSTS) >= _CACHE_LIMIT:
            _HOSTS.clear()
        _HOSTS[key] = host
    return host


def decode_record(buf: bytes | bytearray | memoryview | mmap.mmap, pos: int = 0, *, check_crc: bool = False,
                  with_body: bool = True, limit: int | None = None, strict_topic: bool = False,
                  strict_text: bool = False) -> StoredMessage:
    """Decode the message record at *pos*; MessageDecodeError if it is not a whole, consistent record.

    A topic or properties that are not UTF-8 are read as 4.9.3's MessageDecoder reads them (``new
    String(bytes, UTF_8)``: U+FFFD per malformed sequence, see :func:`java_utf8`), unless *strict_topic*
    (the dispatcher's rule for a topic) or *strict_text* (either; verify's) asks for MessageDecodeError."""
    end = len(buf) if limit is None else limit
    if pos < 0 or pos + 48 > end:
        raise MessageDecodeError("truncated header", pos)
    size, magic = TOTAL_SIZE_MAGIC.unpack_from(buf, pos)
    if magic != MESSAGE_MAGIC:
        raise MessageDecodeError(f"bad magic code {magic & 0xFFFFFFFF:#010x}", pos)
    if size < MIN_RECORD_BYTES or pos + size > end:
        raise MessageDecodeError(f"declared size {size} does not fit", pos)
    sys_flag = _INT.unpack_from(buf, pos + SYS_FLAG_POS)[0]
    header = _HEADERS[(bool(sys_flag & SysFlag.BORNHOST_V6), bool(sys_flag & SysFlag.STOREHOST_V6))]
    if header.size + 3 > size:
        raise MessageDecodeError("record shorter than its header", pos)
    (_, _, crc, queue_id, flag, queue_offset, physical_offset, _, born_ts, born_ip, born_port, store_ts,
     store_ip, store_port, reconsume, prepared, body_len) = header.unpack_from(buf, pos)
    p = pos + header.size
    rec_end = pos + size
    if body_len < 0 or p + body_len + 3 > rec_end:
        raise MessageDecodeError(f"body length {body_len} does not fit", pos)
    body = bytes(buf[p : p + body_len]) if with_body or check_crc else b""
    if check_crc and (zlib.crc32(body) & 0x7FFFFFFF) != crc:
        raise MessageDecodeError("body CRC mismatch", pos)
    p += body_len
    topic_len = buf[p]
    if topic_len > 127 or p + 1 + topic_len + 2 > rec_end:
        raise MessageDecodeError(f"topic length {topic_len} does not fit", pos)
    raw_topic = bytes(buf[p + 1 : p + 1 + topic_len])
    p += 1 + topic_len
    props_len = _PROP_LEN.unpack_from(buf, p)[0]
    if props_len < 0 or p + 2 + props_len != rec_end:
        raise MessageDecodeError(f"properties length {props_len} disagrees with the record size", pos)
    raw_props = bytes(buf[p + 2 : p + 2 + props_len])
    try:
        topic = raw_topic.decode("utf-8")
        props = raw_props.decode("utf-8")
    except UnicodeDecodeError as exc:
        if strict_text:
            raise MessageDecodeError("topic or properties are not UTF-8", pos) from exc
        topic = java_utf8(raw_topic)
        if strict_topic and topic.encode("utf-8") != raw_topic:
            raise MessageDecodeError("topic is not UTF-8", pos) from exc
        props = java_utf8(raw_props)
    try:
        born_host, store_host = _host(born_ip, born_port), _host(store_ip, store_port)
    except MessageError as exc:
        raise MessageDecodeError(f"host address out of range: {exc}", pos) from exc
    return StoredMessage(size, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts,
                         born_host, store_ts, store_host, reconsume, prepared, body if with_body else b"", topic,
                         props)


def decode_dispatch_info(buf: bytes | bytearray | memoryview | mmap.mmap, pos: int, commit_log_offset: int,
                         *, check_crc: bool = False) -> DispatchInfo:
    """The dispatcher's view of the record at *pos*: no body copy unless the CRC is checked."""
    if check_crc:
        m = decode_record(buf, pos, check_crc=True, with_body=False, strict_topic=True)
        return DispatchInfo(commit_log_offset, m.store_size, m.topic, m.queue_id, m.queue_offset, m.sys_flag,
                            m.store_timestamp, m.properties_string)
    end = len(buf)
    if pos + _HEADER_V4.size > end:
        raise MessageDecodeError("truncated header", commit_log_offset)
    header = _HEADER_V4
    fields = header.unpack_from(buf, pos)
    sys_flag = fields[7]
    if sys_flag & 0x30:  # an IPv6 host: the fixed part is longer
        header = _HEADERS[(bool(sys_flag & SysFlag.BORNHOST_V6), bool(sys_flag & SysFlag.STOREHOST_V6))]
        if pos + header.size > end:
            raise MessageDecodeError("truncated header", commit_log_offset)
        fields = header.unpack_from(buf, pos)
    size, magic, queue_id, queue_offset, store_ts, body_len = (fields[0], fields[1], fields[3], fields[5],
                                                               fields[11], fields[16])
    if magic != MESSAGE_MAGIC:
        raise MessageDecodeError(f"bad magic code {magic & 0xFFFFFFFF:#010x}", commit_log_offset)
    rec_end = pos + size
    if size < MIN_RECORD_BYTES or rec_end > end:
        raise MessageDecodeError(f"declared size {size} does not fit", commit_log_offset)
    p = pos + header.size + body_len
    if body_len < 0 or p + 3 > rec_end:
        raise MessageDecodeError(f"body length {body_len} does not fit", commit_log_offset)
    topic_len = buf[p]
    q = p + 1 + topic_len
    if q + 2 > rec_end:
        raise MessageDecodeError(f"topic length {topic_len} does not fit", commit_log_offset)
    props_len = (buf[q] << 8) | buf[q + 1]
    if q + 2 + props_len != rec_end:
        raise MessageDecodeError(f"properties length {props_len} disagrees with the record size",
                                 commit_log_offset)
    try:
        topic = bytes(buf[p + 1 : q]).decode("utf-8")
        props = bytes(buf[q + 2 : rec_end]).decode("utf-8") if props_len else ""
    except UnicodeDecodeError as exc:
        try:
            topic = bytes(buf[p + 1 : q]).decode("utf-8")
        except UnicodeDecodeError:
            raise MessageDecodeError("topic is not UTF-8", commit_log_offset) from exc
        # as 4.9.3's dispatch: properties that are not UTF-8 are read as Java decodes them (U+FFFD)
        props = java_utf8(bytes(buf[q + 2 : rec_end]))
    return DispatchInfo(commit_log_offset, size, topic, queue_id, queue_offset, sys_flag, store_ts, props)
