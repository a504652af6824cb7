"""Remoting frames -> :class:`RemotingCommand`, sans-IO: :func:`decode_command` and :class:`FrameDecoder`.

Owns the reading of both header encodings (the layout is in :mod:`rocketstore.remoting.codec`) and the
stream decoder with its reused receive buffer.  On input the decoder accepts what the real clients send
(C++: trailing newline, numbers among the extFields; ali-ons: numbers and booleans among the extFields, its
own key order).

Contract: for any input bytes the decoder returns commands, asks for more data, or raises ProtocolError
(FrameTooLargeError for an over-long declared length, raised before anything of that size is allocated).

No sockets, asyncio, clocks or logging here; imports only errors, codes, command and the layout constants
of codec.py, never the templates.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import NoReturn

from rocketstore.errors import FrameTooLargeError, ProtocolError
from rocketstore.message.java_utf8 import JAVA_REPLACE
from rocketstore.remoting import codec
from rocketstore.remoting.codec import _HEADER_LENGTH_MASK, _INT32_MAX, _INT32_MIN
from rocketstore.remoting.codes import LanguageCode, SerializeType
from rocketstore.remoting.command import RemotingCommand, new_command

__all__ = ["MAX_FRAME_BYTES", "FrameDecoder", "decode_command"]

# codec.py's structs, bound by assignment: CPython 3.11 compiles a method call on a name that a `from ...
# import` bound to LOAD_ATTR (a bound method object per call) instead of LOAD_METHOD, a cost on every frame.
_INT16, _INT32, _UINT32, _BINARY_FIXED = codec._INT16, codec._INT32, codec._UINT32, codec._BINARY_FIXED

# Java's com.rocketmq.remoting.frameMaxLength default; like Netty's frame decoder we count the 4-byte
# length prefix in it.
MAX_FRAME_BYTES = 16_777_216

_LANGUAGE_BY_NAME = {language.name: language for language in LanguageCode}
_SERIALIZE_TYPES = (SerializeType.JSON, SerializeType.ROCKETMQ)
_JSON_WHITESPACE = " \t\n\r"
_SMALL_COPY_BYTES = 16384
#: The least free space FrameDecoder offers a transport to receive into.
_READ_BYTES = 16384
#: The most a FrameDecoder keeps between frames: a frame up to this size is received without its buffer being
#: freed and grown again (page faults) each time.  A 1000-message pull answer is ~280 KiB with 100-byte bodies
#: and ~1.2 MiB with 1 KiB ones (RocketMQ's default pull limit is 256 KiB), a 64-message batch of 1 KiB
#: bodies ~80 KiB.  Half RocketMQ's default maxMessageSize (4 MiB): a connection that received one message or
#: batch that large (or any frame up to the 16 MiB limit) gives its buffer back after it.
_RETAINED_BUFFER_BYTES = 2 << 20
#: The most of a frame's rest its length word reserves at once (Netty reads at most 64 KiB a time too); the
#: rest of a bigger frame doubles the buffer as its bytes arrive.  Reserving a whole 2 MiB frame ahead let
#: 8 bytes on each of 1000 idle connections hold 2 GiB.
_RESERVED_AHEAD_BYTES = 65536

# code, language, version, opaque, flag, remark, extFields
_Fields = tuple[int, LanguageCode, int, int, int, str | None, dict[str, str]]


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


# Floats become Decimal so a stray ali-ons float is stringified as Java's BigDecimal would ("1E+3"), and
# strict=False accepts raw control characters inside strings (the \x01/\x02 property separators).
_JSON_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant, strict=False)
# A quoted, escaped JSON string, non-ASCII kept (json's C string encoder), for nested values read as text.
_quote_json = codec._quote_json


def decode_command(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """The command in one frame given WITHOUT its 4-byte total-length prefix."""
    if isinstance(frame, memoryview):
        frame = frame.tobytes()
    return _decode_frame(frame, 0, len(frame))


def _decode_frame(buf: bytes | bytearray, start: int, end: int) -> RemotingCommand:
    if end - start < 4:
        raise ProtocolError(f"frame of {end - start} bytes has no header-length word")
    (word,) = _UINT32.unpack_from(buf, start)
    # Masked although C++/ali-ons never set the type byte: Java and we do.
    serialize_type = word >> 24
    header_length = word & _HEADER_LENGTH_MASK
    header_start = start + 4
    header_end = header_start + header_length
    if header_end > end:
        raise ProtocolError(f"header length {header_length} exceeds the {end - header_start} bytes left")
    if serialize_type == 0:  # SerializeType.JSON
        fields = _decode_json_header(buf, header_start, header_end)
    elif serialize_type == 1:  # SerializeType.ROCKETMQ
        fields = _decode_binary_header(bytes(buf[header_start:header_end]))
    else:
        raise ProtocolError(f"unknown serialize type {serialize_type}")
    code, language, version, opaque, flag, remark, ext_fields = fields
    return new_command(code, language, version, opaque, flag, remark, ext_fields, _copy(buf, header_end, end),
                       _SERIALIZE_TYPES[serialize_type])


def _copy(buf: bytes | bytearray, start: int, end: int) -> bytes:
    if type(buf) is bytes:
        return buf[start:end]
    if end - start < _SMALL_COPY_BYTES:  # a memoryview costs more than a second copy of a small body
        return bytes(buf[start:end])
    with memoryview(buf) as view:  # one copy instead of bytearray slice + bytes()
        return bytes(view[start:end])


def _decode_json_header(buf: bytes | bytearray, start: int, end: int) -> _Fields:
    try:
        # (A slice copy is cheaper than a memoryview for a header of a few hundred bytes.)
        try:
            text = buf[start:end].decode("utf-8")
        except UnicodeDecodeError:
            # 4.9.3 makes the header a String first (new String(data, UTF_8)), which replaces malformed bytes
            # with U+FFFD (one per malformed sequence as Java counts them: JAVA_REPLACE), and serves the
            # request: a C++ 1.x client writes a GBK message key into the header as raw bytes.  Only what is
            # still not JSON after that closes the connection.
            text = buf[start:end].decode("utf-8", JAVA_REPLACE)
        # raw_decode skips json's two whitespace regex matches per header; what it leaves over (C++ ends its
        # header with a newline) must be JSON whitespace, as decode() would insist.
        if text[:1] == "{":
            answer = _SEND_ANSWER_MATCH(text)
            fields = _send_answer_fields(answer) if answer is not None else None
            if fields is not None:
                return fields
            send = _SEND_REQUEST_MATCH(text)
            fields = _send_request_fields(send) if send is not None else None
            if fields is not None:
                return fields
            obj, parsed_end = _JSON_DECODER.raw_decode(text)
            if parsed_end != len(text) and text[parsed_end:].strip(_JSON_WHITESPACE):
                obj = _JSON_DECODER.decode(text)  # raises the usual "Extra data" error
        else:
            obj = _JSON_DECODER.decode(text)
    except (ValueError, RecursionError, ArithmeticError) as exc:
        # ValueError covers UnicodeDecodeError, JSONDecodeError and over-long integer literals.
        raise ProtocolError(f"JSON header is not valid: {exc}") from exc
    if type(obj) is not dict:
        raise ProtocolError(f"JSON header is a {type(obj).__name__}, not an object")
    get = obj.get
    code = get("code")
    # The common case inline (a plain int in range, a known language name); anything else takes the
    # general readers below, which also raise.  No code (or null) is 0, Java's int field default: 4.9.3
    # serves it as request code 0 (REQUEST_CODE_NOT_SUPPORTED from a broker) and keeps the connection.
    if type(code) is not int or not _INT32_MIN <= code <= _INT32_MAX:
        code = _json_int(obj, "code")
    raw_language = get("language")
    language = _LANGUAGE_BY_NAME.get(raw_language) if type(raw_language) is str else None
    if language is None:
        language = _json_language(raw_language)
    version = get("version")
    if type(version) is not int or not _INT32_MIN <= version <= _INT32_MAX:
        version = _json_int(obj, "version")
    opaque = get("opaque")
    if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
        opaque = _json_int(obj, "opaque")
    flag = get("flag")
    if type(flag) is not int or not _INT32_MIN <= flag <= _INT32_MAX:
        flag = _json_int(obj, "flag")
    raw_remark = get("remark")
    remark = raw_remark if raw_remark is None or type(raw_remark) is str else _scalar_text(raw_remark, "remark")
    raw_ext = get("extFields")
    ext_fields: dict[str, str]
    if raw_ext is None:
        ext_fields = {}
    elif type(raw_ext) is not dict:
        raise ProtocolError(f"extFields is a {type(raw_ext).__name__}, not an object")
    else:
        # The decoder's fresh dict is kept, its non-string values (C++ sends some numbers bare, ali-ons
        # numbers and booleans) replaced in place: JSON object keys are always strings.
        ext_fields = raw_ext
        for raw_value in raw_ext.values():
            if type(raw_value) is not str:
                for key in [key for key, value in raw_ext.items() if type(value) is not str]:
                    value = raw_ext[key]
                    if type(value) is int:  # C++ 1.x: queueId, sysFlag, flag, ... as JSON numbers
                        raw_ext[key] = str(value)
                    elif value is None:  # null values are dropped, as ali-ons drops undefined ones
                        del raw_ext[key]
                    else:
                        raw_ext[key] = _scalar_text(value, key)
                break
    # serializeTypeCurrentRPC and any unknown keys are ignored on purpose.
    return code, language, version, opaque, flag, remark, ext_fields


# A JSON int as json's scanner reads it (ASCII digits only, no leading zero) of at most 9 digits, so that it
# fits an int32 without a range check (longer ones, rare, take the general path).
_JSON_INT = r"(-?(?:0|[1-9][0-9]{0,8}))"
# A JSON string without escapes, its text captured: then the decoded value is the text itself (strict=False
# takes raw control characters verbatim too).
_PLAIN_STRING = r'"([^"\\]*)"'
#: A send answer exactly as a broker writes it (JsonResponseTemplate of broker/send.py, and Java's layout):
#: the one response a producer reads per send, decoded without the general JSON decoder.  msgId (a batch's
#: is 64 ids joined by commas, ~2 KB) is read by ``[^"]*``, which the regex engine runs as one tight loop
#: (~5x fewer instructions than ``[^"\\]*``); a backslash in what it took sends the header to the general
#: path (_send_answer_fields), so an escape can never be misread.
_SEND_ANSWER_MATCH = re.compile(
    r'\{"code":' + _JSON_INT + r',"extFields":\{"msgId":"([^"]*)"' + ',"queueId":' + _PLAIN_STRING
    + ',"queueOffset":' + _PLAIN_STRING + ',"MSG_REGION":' + _PLAIN_STRING + ',"TRACE_ON":' + _PLAIN_STRING
    + r'\},"flag":' + _JSON_INT + ',"language":"JAVA","opaque":' + _JSON_INT
    + ',"serializeTypeCurrentRPC":"JSON","version":' + _JSON_INT + r"\}").fullmatch


def _send_answer_fields(answer: re.Match[str]) -> _Fields | None:
    """The fields of a header :data:`_SEND_ANSWER_MATCH` matched, as the general path would read them."""
    code_text, msg_id, queue_id, queue_offset, region, trace_on, flag_text, opaque_text, version_text = (
        answer.groups())
    if "\\" in msg_id:
        return None
    ext_fields = {"msgId": msg_id, "queueId": queue_id, "queueOffset": queue_offset, "MSG_REGION": region,
                  "TRACE_ON": trace_on}
    return int(code_text), LanguageCode.JAVA, int(version_text), int(opaque_text), int(flag_text), None, ext_fields


#: The extFields keys of a send request (SendMessageRequestHeaderV2's one-letter names) in the order our
#: producer's JsonRequestTemplate and 4.9.3's Java client (fastjson over a HashMap) write them for a plain
#: send: no ``l`` (maxReconsumeTimes, a retry's).
_SEND_REQUEST_KEYS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m")
#: A send request (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE_V2: any code) exactly as those
#: clients write it: the one request a broker reads per send, decoded without the general JSON decoder.
#: Values are read by ``[^"]*`` (one tight loop, as the answer's msgId); both clients write the properties'
#: separators \x01 / \x02 as escapes, which _send_request_fields turns back, and it sends a header with any
#: other backslash to the general path, so an escape can never be misread.
_SEND_REQUEST_MATCH = re.compile(
    r'\{"code":' + _JSON_INT + r',"extFields":\{' + ",".join(f'"{key}":"([^"]*)"' for key in _SEND_REQUEST_KEYS)
    + r'\},"flag":' + _JSON_INT + ',"language":"JAVA","opaque":' + _JSON_INT
    + ',"serializeTypeCurrentRPC":"JSON","version":' + _JSON_INT + r"\}").fullmatch


def _send_request_fields(send: re.Match[str]) -> _Fields | None:
    """The fields of a header :data:`_SEND_REQUEST_MATCH` matched, as the general path would read them, or
    None for a header with an escape other than those of the properties' two separators."""
    code_text, a, b, c, d, e, f, g, h, i, j, k, m, flag_text, opaque_text, version_text = send.groups()
    text = send.string
    i_start, i_end = send.span(10)
    if text.find("\\", 0, i_start) >= 0 or text.find("\\", i_end) >= 0:  # an escape in another value
        return None
    if "\\" in i:
        i = i.replace("\\u0001", "\x01").replace("\\u0002", "\x02")
        if "\\" in i:  # (an escaped backslash leaves one of its two here, whatever follows it)
            return None
    ext_fields = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "g": g, "h": h, "i": i, "j": j, "k": k, "m": m}
    return int(code_text), LanguageCode.JAVA, int(version_text), int(opaque_text), int(flag_text), None, ext_fields


def _json_int(obj: dict[str, object], key: str) -> int:
    value = obj.get(key)
    if value is None:
        return 0  # Java's int field default
    if type(value) is int:
        number = value
    elif type(value) is str and (value[1:] if value[:1] in ("+", "-") else value).isdecimal():
        try:
            number = int(value)  # fastjson casts numeric strings into int fields
        except ValueError as exc:  # past Python's 4300-digit limit
            raise ProtocolError(f"JSON header {key} is not an int") from exc
    else:
        raise ProtocolError(f"JSON header {key} is {value!r:.64}, not an int")
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise ProtocolError(f"JSON header {key} {number} does not fit an int")
    return number


def _json_language(value: object) -> LanguageCode:
    if value is None:
        return LanguageCode.JAVA  # Java's field default
    if type(value) is str:
        return _LANGUAGE_BY_NAME.get(value, LanguageCode.OTHER)
    if type(value) is int:
        return LanguageCode(value) if 0 <= value <= LanguageCode.OMS else LanguageCode.OTHER
    raise ProtocolError(f"JSON header language is {value!r}, not a name")


def _scalar_text(value: object, name: str) -> str:
    if type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int or type(value) is Decimal:
        return str(value)
    if type(value) is dict or type(value) is list:
        # fastjson reads any JSON value into a String field (4.9.3's extFields values, the remark): an object
        # or array becomes its JSON text, as JSONObject.toString() writes it; the request is served
        try:
            return _json_text(value)
        except RecursionError as exc:
            raise ProtocolError(f"JSON header {name} is nested too deeply") from exc
    raise ProtocolError(f"JSON header {name}: a {type(value).__name__} where a string belongs")


def _json_text(value: object) -> str:
    """*value* (from the header decoder: str, int, Decimal, bool, None, dict, list) as compact JSON text the
    way fastjson's toString() writes a parsed JSONObject/JSONArray: null members of an object left out, null
    items of an array kept, numbers as Java prints them.  (fastjson keeps a nested object's members in a
    HashMap, so with several members Java's order may differ from this, the order they came in.)"""
    if type(value) is str:
        return _quote_json(value)
    if type(value) is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is dict:
        return "{" + ",".join(_quote_json(key) + ":" + _json_text(item) for key, item in value.items()
                              if item is not None) + "}"
    if type(value) is list:
        return "[" + ",".join(_json_text(item) for item in value) + "]"
    return str(value)  # int, Decimal


def _decode_binary_header(header: bytes) -> _Fields:
    size = len(header)
    if size < _BINARY_FIXED.size:
        raise ProtocolError(f"binary header of {size} bytes is shorter than its fixed part")
    code, language_byte, version, opaque, flag, remark_length = _BINARY_FIXED.unpack_from(header, 0)
    position = _BINARY_FIXED.size
    remark = None
    # Java reads a length <= 0 as "absent" rather than failing; so do we.
    if remark_length > 0:
        remark_end = position + remark_length
        if remark_end > size:
            raise ProtocolError(f"binary header remark length {remark_length} overruns the header")
        # Java's new String(bytes, UTF_8) replaces malformed input instead of failing.
        remark = header[position:remark_end].decode("utf-8", JAVA_REPLACE)
        position = remark_end
    if size - position < 4:
        raise ProtocolError("binary header ends before the extFields length")
    (ext_length,) = _INT32.unpack_from(header, position)
    position += 4
    ext_fields: dict[str, str] = {}
    if ext_length > 0:
        ext_end = position + ext_length
        if ext_end > size:
            raise ProtocolError(f"binary header extFields length {ext_length} overruns the header")
        ext_fields = _decode_binary_map(header, position, ext_end)
    # Bytes after the extFields are ignored, as Java ignores them.
    try:
        language = LanguageCode(language_byte)
    except ValueError:
        language = LanguageCode.OTHER
    return code, language, version, opaque, flag, remark, ext_fields


def _decode_binary_map(buf: bytes, position: int, end: int) -> dict[str, str]:
    fields: dict[str, str] = {}
    while position < end:
        if end - position < 2:
            raise ProtocolError("binary extFields end inside a key length")
        (key_length,) = _INT16.unpack_from(buf, position)
        position += 2
        if key_length < 0 or position + key_length > end:
            raise ProtocolError(f"binary extFields key length {key_length} is invalid")
        key = buf[position : position + key_length].decode("utf-8", JAVA_REPLACE)
        position += key_length
        if end - position < 4:
            raise ProtocolError("binary extFields end inside a value length")
        (value_length,) = _INT32.unpack_from(buf, position)
        position += 4
        if value_length < 0 or position + value_length > end:
            raise ProtocolError(f"binary extFields value length {value_length} is invalid")
        fields[key] = buf[position : position + value_length].decode("utf-8", JAVA_REPLACE)
        position += value_length
    return fields


class FrameDecoder:
    """Splits a byte stream into commands: `feed` what arrived (or let the transport receive straight into
    `writable_buffer` and call `wrote`), then call `next_command` until None.

    After a ProtocolError the stream cannot be resynchronised, so the decoder stays failed: every later
    `next_command` raises the same error and `feed` discards its input; the connection must be closed.
    Not thread-safe: one decoder per connection, driven by one task.

    The bytes received live in one buffer, between a read and a write position, that is reused from frame
    to frame instead of trimmed after each: the trimmed buffer went back to the allocator and was grown
    again for the next frame, ~170 page faults per 1000-message pull answer.  Between frames it keeps at
    most :data:`_RETAINED_BUFFER_BYTES`; one grown for a bigger frame is dropped once that frame is taken.
    """

    __slots__ = ("_buffer", "_error", "_max_frame_bytes", "_read", "_write")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 8:
            raise ValueError(f"max_frame_bytes must be at least 8, not {max_frame_bytes}")
        self._buffer = bytearray()
        self._read = self._write = 0  # the bytes not yet decoded are _buffer[_read:_write]
        self._max_frame_bytes = max_frame_bytes
        self._error: ProtocolError | None = None

    @property
    def max_frame_bytes(self) -> int:
        return self._max_frame_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as commands."""
        return self._write - self._read

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._error is None:
            size = len(data)
            if len(self._buffer) - self._write < size:
                self._make_room(size)
            write = self._write
            self._buffer[write : write + size] = data  # same length: a copy, never a resize
            self._write = write + size

    def writable_buffer(self) -> memoryview:
        """The free space after the bytes not yet decoded, at least :data:`_READ_BYTES` and room for the
        rest of a frame whose length has arrived (a frame up to :data:`_RESERVED_AHEAD_BYTES` at once): what
        :meth:`asyncio.BufferedProtocol.get_buffer` hands the transport.  Say with :meth:`wrote` how much
        of it was filled before asking again."""
        write = self._write
        if write == 0 and len(self._buffer) >= _READ_BYTES:  # the usual case: everything received is decoded
            return memoryview(self._buffer)
        if len(self._buffer) - write < _READ_BYTES or write - self._read >= 4:
            self._make_room(_READ_BYTES)
            write = self._write
        return memoryview(self._buffer)[write:]

    def wrote(self, size: int) -> None:
        """*size* bytes were received at the start of the last :meth:`writable_buffer`."""
        if self._error is None:
            self._write += size

    def _make_room(self, min_bytes: int) -> None:
        """At least *min_bytes* free after the bytes not yet decoded, and room for the rest of the frame
        they begin when its length is known and valid: all of a frame up to _RESERVED_AHEAD_BYTES, beyond that
        the buffer doubles as the frame arrives (4 bytes from a peer must not buy a 16 MiB allocation).
        A buffer that a view still holds (BufferError on a resize) is replaced by a bigger copy."""
        buf, read, write = self._buffer, self._read, self._write
        unread = write - read
        wanted = min_bytes
        if unread >= 4:
            frame_bytes = _INT32.unpack_from(buf, read)[0] + 4
            rest = frame_bytes - unread
            if rest > wanted and frame_bytes <= self._max_frame_bytes:
                wanted = rest if frame_bytes <= _RESERVED_AHEAD_BYTES else max(wanted, min(rest, len(buf)))
        if len(buf) - write >= wanted:
            return
        if read:  # the undecoded bytes to the front: a copy of a frame's first part, once per frame
            buf[:unread] = buf[read:write]
            self._read, self._write = 0, unread
        size = max(unread + wanted, _READ_BYTES)
        if size > len(buf):
            try:
                buf += bytes(size - len(buf))  # in place: realloc moves no bytes of a large buffer
            except BufferError:  # a view of it is still alive
                grown = bytearray(size)
                grown[:unread] = buf[:unread]
                self._buffer = grown

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or None when more data is needed."""
        if self._error is not None:
            raise self._error
        buf = self._buffer
        read = self._read
        unread = self._write - read
        if unread < 4:
            return None
        (length,) = _INT32.unpack_from(buf, read)
        if length < 4:
            self._fail(ProtocolError(f"frame length {length} is too small for a header-length word"))
        frame_bytes = length + 4
        if frame_bytes > self._max_frame_bytes:
            self._fail(FrameTooLargeError(frame_bytes, self._max_frame_bytes))
        if unread < frame_bytes:
            return None
        try:
            command = _decode_frame(buf, read + 4, read + frame_bytes)
        except ProtocolError as exc:
            self._fail(exc)
        read += frame_bytes
        if read == self._write:  # the usual case: every byte received is decoded
            self._read = self._write = 0
            if len(buf) > _RETAINED_BUFFER_BYTES:
                self._buffer = bytearray()
        elif len(buf) > _RETAINED_BUFFER_BYTES and self._write - read <= _RETAINED_BUFFER_BYTES // 2:
            self._buffer = buf[read : self._write]
            self._read, self._write = 0, len(self._buffer)
        else:
            self._read = read
        return command

    def _fail(self, error: ProtocolError) -> NoReturn:
        self._error = error
        self._buffer = bytearray()
        self._read = self._write = 0
        raise error
