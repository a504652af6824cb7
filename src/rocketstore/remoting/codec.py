"""Remoting frame layout and the encoder: :class:`RemotingCommand` -> frame bytes, sans-IO.

Owns the frame layout and both header encodings::

    +----------------+--------------------------------+--------------+------------+
    | total length   | header-length word             | header bytes | body bytes |
    | int32 BE       | int32 BE: type << 24 | hdr len  | hdr len      | the rest   |
    +----------------+--------------------------------+--------------+------------+
      total length = 4 + header length + body length (it does not count itself)

    ROCKETMQ (binary) header, type 1, all big-endian:
    +------+------+---------+--------+------+------------+--------+------------+------------------+
    | code | lang | version | opaque | flag | remark len | remark | ext len    | ext entries      |
    | i16  | i8   | i16     | i32    | i32  | i32        | UTF-8  | i32        | (see below)      |
    +------+------+---------+--------+------+------------+--------+------------+------------------+
    ext entry: key len i16 | key UTF-8 | value len i32 | value UTF-8

JSON headers (type 0) are written the way a Java broker writes them: keys in alphabetical order, compact,
null keys left out, `extFields` left out when empty and its values always strings.

The layout's structs and limits are defined here once; :mod:`rocketstore.remoting.frame_decoder` (frames ->
commands) and :mod:`rocketstore.remoting.templates` (preformatted JSON frames of the hot paths) import them.

No sockets, asyncio, clocks or logging here; imports only errors, codes, command and fastjson (its string
escapes), never the decoder or the templates.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from decimal import Decimal

from rocketstore.errors import ProtocolError
from rocketstore.message.record import body_type_error
from rocketstore.remoting.codes import LanguageCode, SerializeType
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.fastjson import java_escapes

__all__ = ["encode_command", "encode_command_parts"]

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_PREFIX = struct.Struct(">iI")  # total length, header-length word
_UINT32 = struct.Struct(">I")
_BINARY_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remark length
_HEADER_LENGTH_MASK = 0xFFFFFF
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT16_MIN, _INT16_MAX = -(2**15), 2**15 - 1

_JSON_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False
)
# The string encoder json.dumps(..., ensure_ascii=False) uses (the C one when _json is built): a quoted,
# escaped JSON string.
_quote_json: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
# Language -> its JSON value (quoted name), for members and the plain ints equal to them.
_LANGUAGE_JSON: dict[object, str] = {language: f'"{language.name}"' for language in LanguageCode}


# --- encoding ---------------------------------------------------------------------------------------


def encode_command(cmd: RemotingCommand, opaque: int | None = None) -> bytes:
    """The whole frame for `cmd`, 4-byte total length included, built with one copy of the body.
    *opaque*, when given, replaces ``cmd.opaque`` on the wire (a connection numbering its requests)."""
    prefix, header, body = _encode_pieces(cmd, opaque)
    try:
        return b"".join((prefix, header, body))
    except TypeError as e:  # (a try costs nothing until it raises)
        raise body_type_error(body) or e from None


def encode_command_parts(cmd: RemotingCommand, opaque: int | None = None) -> tuple[bytes, bytes]:
    """The frame for `cmd` as (length words + header, body), the two pieces that joined are
    :func:`encode_command`'s frame: a transport can write them without copying a large body into a new
    buffer first (a pull response carries up to megabytes of records)."""
    prefix, header, body = _encode_pieces(cmd, opaque)
    return prefix + header, body


def _encode_pieces(cmd: RemotingCommand, opaque: int | None) -> tuple[bytes, bytes, bytes]:
    serialize_type = cmd.serialize_type
    if opaque is None:
        opaque = cmd.opaque
    if serialize_type == SerializeType.JSON:
        header = _encode_json_header(cmd, opaque)
    elif serialize_type == SerializeType.ROCKETMQ:
        header = _encode_binary_header(cmd, opaque)
    else:
        raise ProtocolError(f"unknown serialize type {serialize_type!r}")
    header_length = len(header)
    if header_length > _HEADER_LENGTH_MASK:
        raise ProtocolError(f"header of {header_length} bytes does not fit the 24-bit header length")
    body = cmd.body
    total = 4 + header_length + len(body)
    if total > _INT32_MAX:
        raise ProtocolError(f"frame of {total} bytes does not fit the 32-bit frame length")
    return _PREFIX.pack(total, (int(serialize_type) << 24) | header_length), header, body


def _encode_json_header(cmd: RemotingCommand, opaque: int) -> bytes:
    """The JSON header, written out by hand: the output :func:`_encode_json_header_reference` gives (keys
    in alphabetical order as fastjson sorts bean properties, compact, strings escaped by json's own C
    string encoder) without building a dict and running the generic encoder for every frame.  A unit test
    holds the two equal."""
    code, flag, version = cmd.code, cmd.flag, cmd.version
    # type() is int: bool and int subclasses (IntEnum codes) take the checked path, which returns a plain int
    if type(code) is not int or not _INT32_MIN <= code <= _INT32_MAX:
        code = _checked_int(code, "code", _INT32_MIN, _INT32_MAX)
    if type(flag) is not int or not _INT32_MIN <= flag <= _INT32_MAX:
        flag = _checked_int(flag, "flag", _INT32_MIN, _INT32_MAX)
    if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
        opaque = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
    if type(version) is not int or not _INT32_MIN <= version <= _INT32_MAX:
        version = _checked_int(version, "version", _INT32_MIN, _INT32_MAX)
    language = _LANGUAGE_JSON.get(cmd.language)
    if language is None:
        language = '"' + _checked_language(cmd.language).name + '"'
    ext_fields = cmd.ext_fields
    ext = ""
    if ext_fields:
        quote = _quote_json
        items = []
        for key, value in ext_fields.items():
            if type(value) is not str:
                if value is None:  # Java skips null header fields
                    continue
                if not isinstance(key, str):
                    raise ProtocolError(f"extFields key {key!r} is not a string")
                value = _java_text(value, key)
            elif type(key) is not str and not isinstance(key, str):
                raise ProtocolError(f"extFields key {key!r} is not a string")
            items.append(quote(key) + ":" + quote(value))
        if items:
            ext = ',"extFields":{' + ",".join(items) + "}"
    remark = cmd.remark
    remark_text = "" if remark is None else ',"remark":' + _quote_json(_java_text(remark, "remark"))
    text = (f'{{"code":{code}{ext},"flag":{flag},"language":{language},"opaque":{opaque}{remark_text},'
            f'"serializeTypeCurrentRPC":"JSON","version":{version}}}')
    text = java_escapes(text)  # fastjson's escapes (a text that needs none is returned as it is)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates become '?' exactly as Java's String.getBytes(UTF_8) does.
        return text.encode("utf-8", "replace")


def _encode_json_header_reference(cmd: RemotingCommand, opaque: int) -> bytes:
    """The JSON header through a dict and :mod:`json`'s encoder: the plain statement of the format that
    :func:`_encode_json_header` must reproduce byte for byte (tests compare them)."""
    # Insertion order is the output order: alphabetical, as fastjson sorts bean properties.
    obj: dict[str, object] = {"code": _checked_int(cmd.code, "code", _INT32_MIN, _INT32_MAX)}
    ext = _output_ext_fields(cmd.ext_fields)
    if ext:
        obj["extFields"] = ext
    obj["flag"] = _checked_int(cmd.flag, "flag", _INT32_MIN, _INT32_MAX)
    obj["language"] = _checked_language(cmd.language).name
    obj["opaque"] = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
    if cmd.remark is not None:
        obj["remark"] = _java_text(cmd.remark, "remark")
    obj["serializeTypeCurrentRPC"] = "JSON"
    obj["version"] = _checked_int(cmd.version, "version", _INT32_MIN, _INT32_MAX)
    return java_escapes(_JSON_ENCODER.encode(obj)).encode("utf-8", "replace")

def _encode_binary_header(cmd: RemotingCommand, opaque: int) -> bytes:
    remark = b"" if cmd.remark is None else _java_text(cmd.remark, "remark").encode("utf-8", "replace")
    parts = [
        _BINARY_FIXED.pack(
            _checked_int(cmd.code, "code", _INT16_MIN, _INT16_MAX),
            int(_checked_language(cmd.language)),
            _checked_int(cmd.version, "version", _INT16_MIN, _INT16_MAX),
            _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX),
            _checked_int(cmd.flag, "flag", _INT32_MIN, _INT32_MAX),
            len(remark),
        ),
        remark,
    ]
    entries = []
    for key, value in _output_ext_fields(cmd.ext_fields).items():
        key_bytes = key.encode("utf-8", "replace")
        value_bytes = value.encode("utf-8", "replace")
        if len(key_bytes) > _INT16_MAX:
            raise ProtocolError(f"extFields key of {len(key_bytes)} bytes does not fit a 16-bit length")
        entries.append(_INT16.pack(len(key_bytes)))
        entries.append(key_bytes)
        entries.append(_INT32.pack(len(value_bytes)))
        entries.append(value_bytes)
    ext = b"".join(entries)
    parts.append(_INT32.pack(len(ext)))
    parts.append(ext)
    return b"".join(parts)


def _output_ext_fields(ext_fields: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in ext_fields.items():
        if value is None:  # Java skips null header fields
            continue
        if not isinstance(key, str):
            raise ProtocolError(f"extFields key {key!r} is not a string")
        out[key] = value if type(value) is str else _java_text(value, key)
    return out


def _checked_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{name} must be an int, not {value!r}")
    if not low <= value <= high:
        raise ProtocolError(f"{name} {value} is outside [{low}, {high}]")
    return int(value)


def _checked_language(value: object) -> LanguageCode:
    try:
        return LanguageCode(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ProtocolError(f"unknown language {value!r}") from exc


def _java_text(value: object, name: str) -> str:
    """A scalar as Java's toString() renders it (fastjson's cast of a JSON scalar into a String field)."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    raise ProtocolError(f"{name}: {type(value).__name__} value is not a string or scalar")
