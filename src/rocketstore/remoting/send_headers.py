"""The send family's headers (SEND_MESSAGE 10, SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320 and the reply
sends 324, 325) and the fast path that reads the send request header once per send.

SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE carry the send header under one-letter names; both spellings decode
to :class:`SendMessageRequestHeader`.  :func:`send_message_header_fields` reads a well-formed header's values
without the generic field table and falls back to it (same values, same HeaderFieldError) for anything else.

Headers are immutable values, safe to share between threads.  Pure: imports only remoting.codes and
remoting.header_fields, nothing with sockets, clocks or threads; never headers.py, which imports this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Self

from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.header_fields import (
    _BOOL,
    _INT,
    _LONG,
    _SEND_V2_NAMES,
    CommandHeader,
    _decode,
    _encode,
    _opt,
    _req,
    _specs,
)

__all__ = [
    "SEND_MESSAGE_V2_CODES",
    "SendHeaderFields",
    "SendMessageRequestHeader",
    "SendMessageResponseHeader",
    "parse_send_message_header",
    "send_message_header_fields",
]

# Codes whose send header uses the one-letter names.
SEND_MESSAGE_V2_CODES: frozenset[int] = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)


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
    v2 = code in SEND_MESSAGE_V2_CODES
    try:
        fields = _read_send_usual(_SEND_V2_USUAL if v2 else _SEND_V1_USUAL, ext_fields)
    except (KeyError, TypeError, AttributeError):  # (a try costs nothing until it raises) not the usual header
        fields = None
    if fields is None:
        fields = _read_send_fast(_SEND_V2_WIRE if v2 else _SEND_V1_WIRE, ext_fields)
    if fields is None:
        header = parse_send_message_header(code, ext_fields)
        fields = tuple(getter(header) for getter in _SEND_GETTERS)  # type: ignore[assignment]
    return fields  # type: ignore[return-value]


#: the decimal texts of the small numbers a usual send header carries (queue counts and ids, sysFlag, flag,
#: reconsume times), each as Java reads it; any other text (a sign, a leading zero, a non-ASCII digit, more
#: digits) is not a key: _read_send_fast reads it
_SMALL_INTS = {str(number): number for number in range(1024)}
#: unitMode / batch as Boolean.parseBoolean reads the usual texts (absent: false); others are not keys
_USUAL_BOOLS: dict[str | None, bool] = {None: False, "false": False, "true": True}
#: (itemgetter of the eight required fields, properties, reconsumeTimes, unitMode, batch and
#: maxReconsumeTimes names) per spelling
_UsualWire = tuple[Callable[[Mapping[str, str]], tuple[str, ...]], str, str, str, str, str]


def _usual_wire(wire: tuple[str, ...]) -> _UsualWire:
    return (itemgetter(*wire[:8]), *wire[8:])  # type: ignore[return-value]


_SEND_V1_USUAL = _usual_wire(_SEND_V1_WIRE)
_SEND_V2_USUAL = _usual_wire(_SEND_V2_WIRE)


def _read_send_usual(usual: _UsualWire, ext_fields: Mapping[str, str]) -> SendHeaderFields | None:
    """:func:`_read_send_fast` for the header nearly every send carries: the eight required fields in one
    C call, the small numbers and the booleans by table.  Raises KeyError, TypeError or AttributeError, or
    returns None, for anything else (a field missing, a number off the table, a value that is no string):
    then :func:`_read_send_fast` reads it (same values, or None)."""
    getter, w_properties, w_reconsume, w_unit_mode, w_batch, w_max_reconsume = usual
    group, topic, default_topic, raw_queue_nums, raw_queue_id, raw_sys_flag, raw_born, raw_flag = getter(ext_fields)
    if type(group) is not str or type(topic) is not str or type(default_topic) is not str:
        return None
    small = _SMALL_INTS
    if not raw_born.isdecimal() or len(raw_born) > 18:
        return None
    get = ext_fields.get
    properties = get(w_properties)
    if properties is not None and type(properties) is not str:
        return None
    raw = get(w_reconsume)
    raw_max = get(w_max_reconsume)
    bools = _USUAL_BOOLS
    return (group, topic, default_topic, small[raw_queue_nums], small[raw_queue_id], small[raw_sys_flag],
            int(raw_born), small[raw_flag], properties, None if raw is None else small[raw],
            bools[get(w_unit_mode)], bools[get(w_batch)], None if raw_max is None else small[raw_max])


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


def parse_send_message_header(code: int, ext_fields: Mapping[str, str]) -> SendMessageRequestHeader:
    """The send header of a request with `code`, read under the one-letter names for the v2 codes."""
    if code in SEND_MESSAGE_V2_CODES:
        return SendMessageRequestHeader.from_ext_fields_v2(ext_fields)
    return SendMessageRequestHeader.from_ext_fields(ext_fields)
