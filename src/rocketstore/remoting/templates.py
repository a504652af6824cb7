"""Preformatted JSON frames for the hot paths: a send answer and a producer's send request.

Owns :class:`JsonResponseTemplate` and :class:`JsonRequestTemplate`, each a frame's JSON header as a
%-format with the constant parts quoted once, whose output is byte for byte what
:func:`rocketstore.remoting.codec.encode_command` writes for the same command (unit and hypothesis tests in
tests/unit/remoting/test_send_fast_paths.py hold them equal).

Pure: imports the frame layout and the value checks from codec.py (one definition of the layout), and
nothing with sockets, clocks or logging; never the decoder.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketstore.errors import ProtocolError
from rocketstore.message.record import body_type_error
from rocketstore.remoting import codec
from rocketstore.remoting.codec import (
    _HEADER_LENGTH_MASK,
    _INT32_MAX,
    _INT32_MIN,
    _checked_int,
    _java_text,
    _quote_json,
)
from rocketstore.remoting.codes import MQ_VERSION, LanguageCode
from rocketstore.remoting.command import RESPONSE_FLAG
from rocketstore.remoting.fastjson import RAW_NEEDS_JAVA_ESCAPE, java_escapes

__all__ = ["JsonRequestTemplate", "JsonResponseTemplate"]

# Bound by assignment, not imported by name: CPython 3.11 compiles a method call on a from-imported name to
# LOAD_ATTR (a bound method object per call) instead of LOAD_METHOD, a cost on every frame.
_PREFIX = codec._PREFIX
_NEEDS_ESCAPE = RAW_NEEDS_JAVA_ESCAPE


def _need_escapes(values: tuple[str, ...]) -> bool:
    """Whether a value holds a character fastjson escapes otherwise than json (looked for in the values as
    given, shorter than the quoted header)."""
    search = _NEEDS_ESCAPE.search
    for value in values:
        # every such character is unprintable (Cc, Zl, Zp): a printable value (a msgId, an offset) needs
        # no search; a properties string (its separators are unprintable) does
        if not value.isprintable() and search(value) is not None:
            return True
    return False


class JsonResponseTemplate:
    """Whole frames of JSON responses that differ only in code, opaque and the values of a fixed list of
    extFields, followed by constant ones: what a handler answers for every request of a hot path (a send's
    msgId / queueId / queueOffset, then MSG_REGION / TRACE_ON).

    ``template.encode(code, opaque, values)`` is byte for byte ``encode_command(RemotingCommand.response(
    code, opaque, ext_fields={**dict(zip(keys, values)), **constant}))`` (no remark, no body; a unit test
    holds them equal), but the keys and the constant tail are quoted once here rather than per frame, and
    no command object is built on the way.
    """

    __slots__ = ("_escape", "_format", "_plain_format")

    def __init__(self, keys: tuple[str, ...], constant: Mapping[str, str]) -> None:
        if not keys:
            raise ValueError("a template needs at least one variable extFields key")
        names = [_quote_json(key) for key in keys]
        if len(set(names)) != len(names) or any(key in constant for key in keys):
            raise ValueError("extFields keys must be distinct")
        fixed = "".join(f",{_quote_json(key)}:{_quote_json(_java_text(value, key))}"
                        for key, value in constant.items() if value is not None)
        variable = ",".join(name.replace("%", "%%") + ":%s" for name in names)
        # _encode_json_header's output for a response (flag 1, JAVA, 4.9.3, no remark) as a %-format
        tail = (fixed.replace("%", "%%") + '},"flag":' + str(RESPONSE_FLAG) + ',"language":"' + LanguageCode.JAVA.name
                + '","opaque":%d,"serializeTypeCurrentRPC":"JSON","version":' + str(MQ_VERSION) + "}")
        self._format = '{"code":%d,"extFields":{' + variable + tail
        #: the same with the variable values' quotes in place (encode_plain)
        self._plain_format = ('{"code":%d,"extFields":{'
                              + ",".join(name.replace("%", "%%") + ':"%s"' for name in names) + tail)
        #: whether the constant part holds text fastjson escapes otherwise (then every frame is fixed up)
        self._escape = any(_NEEDS_ESCAPE.search(text) is not None
                           for text in (*keys, *constant, *(v for v in constant.values() if v is not None)))

    def encode_plain(self, code: int, opaque: int, values: tuple[str, ...]) -> bytes:
        """:meth:`encode` for values its caller knows to be plain: printable ASCII without a quote or a
        backslash (hex message ids, comma-joined or not, and decimal numbers, as a send answer's), which JSON
        writes as they are, so that they are not quoted and searched one by one."""
        if type(code) is not int or not _INT32_MIN <= code <= _INT32_MAX:
            code = _checked_int(code, "code", _INT32_MIN, _INT32_MAX)
        if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
            opaque = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
        text = self._plain_format % (code, *values, opaque)
        if self._escape:  # fastjson's escapes in the constant part (see java_escapes)
            text = java_escapes(text)
        return _header_only_frame(text)

    def encode(self, code: int, opaque: int, values: tuple[str, ...]) -> bytes:
        """The frame, 4-byte total length included.  *values* are strings, one per key, in order."""
        if type(code) is not int or not _INT32_MIN <= code <= _INT32_MAX:
            code = _checked_int(code, "code", _INT32_MIN, _INT32_MAX)
        if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
            opaque = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
        quote = _quote_json
        text = self._format % (code, *[quote(value) for value in values], opaque)
        if self._escape or _need_escapes(values):  # fastjson's escapes (see java_escapes)
            text = java_escapes(text)
        return _header_only_frame(text)


def _header_only_frame(text: str) -> bytes:
    """The frame of an answer's header *text* (no body), 4-byte total length included."""
    try:
        header = text.encode("utf-8")
    except UnicodeEncodeError:
        header = text.encode("utf-8", "replace")  # lone surrogates as Java writes them: '?'
    length = len(header)
    return _PREFIX.pack(4 + length, length) + header


def _request_frame(text: str, body: bytes) -> bytes:
    """The frame of a request's header *text* and *body*, 4-byte total length included."""
    try:
        header = text.encode("utf-8")
    except UnicodeEncodeError:
        header = text.encode("utf-8", "replace")  # lone surrogates as Java writes them: '?'
    length = len(header)
    total = 4 + length + len(body)
    if length > _HEADER_LENGTH_MASK or total > _INT32_MAX:
        raise ProtocolError(f"header of {length} bytes or frame of {total} bytes does not fit its length")
    try:
        return b"".join((_PREFIX.pack(total, length), header, body))
    except TypeError as e:  # (a try costs nothing until it raises) e.g. send("TopicA", "hello")
        raise body_type_error(body) or e from None


class JsonRequestTemplate:
    """Whole frames of JSON requests of one code that differ only in opaque, body and the values of a few
    extFields: what a producer sends for every message to one queue (the born timestamp and the properties
    change per send; group, topic, queue id and the rest do not).

    ``template.encode(values, body, opaque)`` is byte for byte ``encode_command(new_command(code, JAVA, 4.9.3,
    opaque, flag, None, ext_fields with *variable*'s keys set to *values*, body, JSON))`` (a unit test holds
    them equal), but the constant extFields are quoted once here rather than per frame and no command
    object is built.  *opaque* comes last so that a connection can number the frame
    (``functools.partial(template.encode, values, body)`` is what :meth:`Connection.request_encoded` takes).
    """

    __slots__ = ("_escape", "_format")

    def __init__(self, code: int, ext_fields: Mapping[str, str | None], variable: tuple[str, ...], *,
                 flag: int = 0) -> None:
        """*ext_fields* fix the keys' order and the constant values (None: left out, as Java skips null
        fields); the keys in *variable*, keys of *ext_fields* in its order, take their value per frame."""
        if not variable or len(set(variable)) != len(variable) or any(key not in ext_fields for key in variable):
            raise ValueError("the variable keys must be distinct keys of ext_fields")
        code = _checked_int(code, "code", _INT32_MIN, _INT32_MAX)
        flag = _checked_int(flag, "flag", _INT32_MIN, _INT32_MAX)
        if [key for key in ext_fields if key in variable] != list(variable):
            raise ValueError("the variable keys must be in ext_fields' order")
        items = []
        #: whether the constant part holds text fastjson escapes otherwise (then every frame is fixed up)
        self._escape = False
        for key, value in ext_fields.items():
            if not isinstance(key, str):
                raise ProtocolError(f"extFields key {key!r} is not a string")
            name = _quote_json(key).replace("%", "%%")
            if _NEEDS_ESCAPE.search(key) is not None:
                self._escape = True
            if key in variable:
                items.append(name + ":%s")
            elif value is not None:
                items.append(name + ":" + _quote_json(_java_text(value, key)).replace("%", "%%"))
                if _NEEDS_ESCAPE.search(value) is not None:
                    self._escape = True
        # _encode_json_header's output for such a request (JAVA, 4.9.3, no remark) as a %-format
        self._format = ('{"code":' + str(code) + ',"extFields":{' + ",".join(items) + '},"flag":' + str(flag)
                        + ',"language":"' + LanguageCode.JAVA.name
                        + '","opaque":%d,"serializeTypeCurrentRPC":"JSON","version":' + str(MQ_VERSION) + "}")

    def encode_quoted(self, quoted: tuple[str, ...], body: bytes, opaque: int) -> bytes:
        """:meth:`encode` for values given as the JSON text encode writes for them, quotes included, whose
        characters need none of fastjson's escapes (see _need_escapes): a producer's usual properties, whose
        quoted text it keeps per tags (client.outgoing_message._quoted_properties)."""
        if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
            opaque = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
        text = self._format % (*quoted, opaque)
        if self._escape:  # fastjson's escapes in the constant part (see java_escapes)
            text = java_escapes(text)
        return _request_frame(text, body)

    def encode(self, values: tuple[str, ...], body: bytes, opaque: int) -> bytes:
        """The frame, 4-byte total length included.  *values* are strings, one per variable key, in
        order."""
        if type(opaque) is not int or not _INT32_MIN <= opaque <= _INT32_MAX:
            opaque = _checked_int(opaque, "opaque", _INT32_MIN, _INT32_MAX)
        quote = _quote_json
        text = self._format % (*[quote(value) for value in values], opaque)
        if self._escape or _need_escapes(values):  # fastjson's escapes (see java_escapes)
            text = java_escapes(text)
        return _request_frame(text, body)
