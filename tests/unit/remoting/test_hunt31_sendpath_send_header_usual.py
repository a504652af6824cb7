"""The broker reads the send header of nearly every send (small numbers, the usual boolean texts) by table
(send_headers._read_send_usual) before the checked reader: whatever it reads must equal the generic field
table's reading, and anything else must go on to the checked reader."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketstore.remoting import send_headers
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.header_fields import _SEND_V2_NAMES, HeaderFieldError, _decode, _specs
from rocketstore.remoting.send_headers import SendMessageRequestHeader, send_message_header_fields

CASES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# the extFields of a send from 4.9.3's Java client (captured from its request frame), properties decoded
JAVA_EXT = {"a": "pg-jsend", "b": "SendPathT", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1795924206868",
            "h": "0", "i": "UNIQ_KEY\x01FD0000000000000000000000000000021FEA5FFD2B279104BD140000\x02WAIT\x01true"
            "\x02TAGS\x01TagA", "j": "0", "k": "false", "m": "false"}


def _generic(code: int, ext: dict[str, object]) -> object:
    """The generic field table's reading (no fast path), as send_message_header_fields' tuple or error."""
    try:
        header = _decode(SendMessageRequestHeader, _specs(SendMessageRequestHeader,
                                                          v2=code != RequestCode.SEND_MESSAGE), ext)
    except HeaderFieldError as exc:
        return exc.field_name, exc.reason
    return tuple(getattr(header, f.name) for f in dataclasses.fields(header))


def _fields(code: int, ext: dict[str, object]) -> object:
    try:
        return send_message_header_fields(code, ext)  # type: ignore[arg-type]
    except HeaderFieldError as exc:
        return exc.field_name, exc.reason


def _v1(ext: dict[str, object]) -> dict[str, object]:
    return {v1: ext[v2] for v1, v2 in _SEND_V2_NAMES.items() if v2 in ext}


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                                  RequestCode.SEND_REPLY_MESSAGE_V2, RequestCode.SEND_MESSAGE])
def test_the_usual_header_is_read_without_the_checked_reader(code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ext = _v1(JAVA_EXT) if code == RequestCode.SEND_MESSAGE else JAVA_EXT
    expected = _generic(code, ext)  # type: ignore[arg-type]

    def checked(*args: object) -> None:
        raise AssertionError("the checked reader read the usual header")

    monkeypatch.setattr(send_headers, "_read_send_fast", checked)
    assert send_message_header_fields(code, ext) == expected
    assert expected[3:8] == (4, 2, 0, 1795924206868, 0)  # type: ignore[index]


SEND_VALUES = (st.none() | st.sampled_from(["0", "1", "4", "1023", "1024", "-1", "+1", "01", "00", " 1", "1 ", "",
                                            "\u0664", "1\u0664", "true", "TRUE", "True", "false", "FALSE", "1",
                                            "9" * 9, "9" * 10, "9" * 18, "9" * 19, "x"])
               | st.integers(-2, 5) | st.booleans() | st.text(max_size=6))


@CASES
@given(st.fixed_dictionaries({}, optional={name: SEND_VALUES for name in "abcdefghijklm"}),
       st.sampled_from([RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]))
def test_any_send_header_reads_as_the_generic_table_reads_it(ext: dict[str, object], code: int) -> None:
    if code == RequestCode.SEND_MESSAGE:
        ext = _v1(ext)
    assert _fields(code, ext) == _generic(code, ext)


@CASES
@given(st.dictionaries(st.sampled_from("defhjl"), st.sampled_from(["0", "7", "1023", "1024", "010", "-3", "\u0664"])),
       st.dictionaries(st.sampled_from("km"), st.sampled_from(["true", "false", "TRUE", "1", ""])))
def test_near_usual_headers_read_as_the_generic_table_reads_them(numbers: dict[str, str],
                                                                 flags: dict[str, str]) -> None:
    ext = {**JAVA_EXT, **numbers, **flags}
    assert _fields(RequestCode.SEND_MESSAGE_V2, ext) == _generic(RequestCode.SEND_MESSAGE_V2, ext)
