"""Typed custom headers: Java value parsing, v1/v2 send names, required fields, rendering."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from rocketstore.errors import ProtocolError
from rocketstore.remoting import RequestCode
from rocketstore.remoting.header_fields import (
    CommandHeader,
    HeaderFieldError,
    parse_java_boolean,
    parse_java_int,
    parse_java_long,
)
from rocketstore.remoting.headers import (
    REQUEST_HEADER_TYPES,
    RESPONSE_HEADER_TYPES,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryMessageRequestHeader,
    RegisterBrokerRequestHeader,
    UnregisterClientRequestHeader,
    parse_request_header,
)
from rocketstore.remoting.send_headers import (
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    parse_send_message_header,
)

# What the codec hands over for the C++ 1.2.3 send in remoting.md §5.1 (ints already stringified).
CPP_V1_SEND = {
    "AccessKey": "",
    "OnsChannel": "",
    "Signature": "",
    "producerGroup": "pg",
    "topic": "TopicTest",
    "defaultTopic": "TBW102",
    "defaultTopicQueueNums": "4",
    "queueId": "1",
    "sysFlag": "0",
    "bornTimestamp": "1700000000000",
    "flag": "0",
    "properties": "TAGS\x01tagA\x02",
    "reconsumeTimes": "0",
    "unitMode": "false",
    "batch": "false",
    "maxReconsumeTimes": "16",
}
SAME_SEND_V2 = {
    "a": "pg",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "1",
    "f": "0",
    "g": "1700000000000",
    "h": "0",
    "i": "TAGS\x01tagA\x02",
    "j": "0",
    "k": "false",
    "l": "16",
    "m": "false",
}


def test_send_v1_header_parses_per_java_field_types() -> None:
    header = SendMessageRequestHeader.from_ext_fields(CPP_V1_SEND)

    assert header == SendMessageRequestHeader(
        producer_group="pg",
        topic="TopicTest",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="TAGS\x01tagA\x02",
        reconsume_times=0,
        unit_mode=False,
        batch=False,
        max_reconsume_times=16,
    )


def test_send_v2_short_names_map_to_the_same_dataclass_as_v1() -> None:
    v2 = SendMessageRequestHeader.from_ext_fields_v2(SAME_SEND_V2)

    assert v2 == SendMessageRequestHeader.from_ext_fields(CPP_V1_SEND)


def test_send_header_renders_back_in_both_spellings() -> None:
    header = SendMessageRequestHeader.from_ext_fields(CPP_V1_SEND)
    v1 = {k: v for k, v in CPP_V1_SEND.items() if k not in ("AccessKey", "OnsChannel", "Signature")}

    assert header.to_ext_fields() == v1
    assert header.to_ext_fields_v2() == SAME_SEND_V2


def test_ali_ons_v2_header_without_optional_letters_uses_java_defaults() -> None:
    ext = {k: v for k, v in SAME_SEND_V2.items() if k not in ("i", "j", "k", "l", "m")}
    header = SendMessageRequestHeader.from_ext_fields_v2(ext)

    assert header.properties is None and header.reconsume_times is None and header.max_reconsume_times is None
    assert header.unit_mode is False and header.batch is False


@pytest.mark.parametrize(
    ("code", "ext"),
    [(RequestCode.SEND_MESSAGE, CPP_V1_SEND), (RequestCode.SEND_MESSAGE_V2, SAME_SEND_V2)],
)
def test_batch_flag_decides_batching_whatever_the_code(code: int, ext: dict[str, str]) -> None:
    flagged = dict(ext)
    flagged["batch" if code == RequestCode.SEND_MESSAGE else "m"] = "true"

    assert parse_send_message_header(code, flagged).batch is True


def test_send_batch_message_code_reads_the_short_names() -> None:
    header = parse_send_message_header(RequestCode.SEND_BATCH_MESSAGE, SAME_SEND_V2)

    assert header.topic == "TopicTest"


@pytest.mark.parametrize("missing", ["a", "b", "c", "d", "e", "f", "g", "h"])
def test_send_v2_missing_required_letter_raises_with_its_wire_name(missing: str) -> None:
    ext = {k: v for k, v in SAME_SEND_V2.items() if k != missing}

    with pytest.raises(HeaderFieldError) as caught:
        SendMessageRequestHeader.from_ext_fields_v2(ext)

    assert caught.value.field_name == missing
    assert isinstance(caught.value, ProtocolError)


def test_missing_required_field_raises_header_field_error_naming_it() -> None:
    ext = {k: v for k, v in CPP_V1_SEND.items() if k != "topic"}

    with pytest.raises(HeaderFieldError) as caught:
        SendMessageRequestHeader.from_ext_fields(ext)

    assert caught.value.field_name == "topic"
    assert "topic" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value"), [("queueId", "one"), ("queueId", "2147483648"), ("bornTimestamp", "")]
)
def test_malformed_number_raises_header_field_error_with_field_and_value(field: str, value: str) -> None:
    ext = dict(CPP_V1_SEND)
    ext[field] = value

    with pytest.raises(HeaderFieldError) as caught:
        SendMessageRequestHeader.from_ext_fields(ext)

    assert caught.value.field_name == field
    assert caught.value.value == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("+5", 5), ("-0", 0), ("007", 7), ("2147483647", 2**31 - 1), ("-2147483648", -(2**31))],
)
def test_parse_java_int_accepts_what_integer_parse_int_accepts(text: str, expected: int) -> None:
    assert parse_java_int(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "+", "-", " 5", "5 ", "1_000", "0x10", "5.0", "1e3", "2147483648", "-2147483649", "٣ ", "9" * 5000],
)
def test_parse_java_int_rejects_what_integer_parse_int_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_java_int(text)


def test_parse_java_long_has_the_64_bit_range() -> None:
    assert parse_java_long("9223372036854775807") == 2**63 - 1
    assert parse_java_long("-9223372036854775808") == -(2**63)
    with pytest.raises(ValueError):
        parse_java_long("9223372036854775808")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("TRUE", True), ("tRuE", True), ("false", False), ("1", False), ("yes", False),
     ("", False), ("true ", False), (" true", False)],
)
def test_parse_java_boolean_is_true_only_for_case_insensitive_true(text: str, expected: bool) -> None:
    assert parse_java_boolean(text) is expected


def test_boolean_fields_never_fail_they_are_false_unless_true() -> None:
    ext = dict(CPP_V1_SEND, unitMode="TRUE", batch="1")

    header = SendMessageRequestHeader.from_ext_fields(ext)

    assert header.unit_mode is True and header.batch is False


def test_string_fields_are_kept_verbatim_including_empty_and_blank() -> None:
    header = UnregisterClientRequestHeader.from_ext_fields(
        {"clientID": " 10.0.0.1@123#DEFAULT ", "producerGroup": "", "consumerGroup": "g"}
    )

    assert header.client_id == " 10.0.0.1@123#DEFAULT "
    assert header.producer_group == "" and header.consumer_group == "g"


def test_non_string_values_in_the_mapping_raise_header_field_error() -> None:
    with pytest.raises(HeaderFieldError):
        UnregisterClientRequestHeader.from_ext_fields({"clientID": 5})  # type: ignore[dict-item]


def test_pull_request_header_from_a_cpp_push_consumer() -> None:
    ext = {
        "consumerGroup": "cg",
        "topic": "TopicTest",
        "queueId": "2",
        "queueOffset": "120",
        "maxMsgNums": "32",
        "sysFlag": "7",
        "commitOffset": "118",
        "suspendTimeoutMillis": "15000",
        "subscription": "tagA || tagB",
        "subVersion": "0",
    }

    header = PullMessageRequestHeader.from_ext_fields(ext)

    assert (header.queue_id, header.queue_offset, header.max_msg_nums, header.sys_flag) == (2, 120, 32, 7)
    assert header.suspend_timeout_ms == 15000 and header.commit_offset == 118
    assert header.subscription == "tagA || tagB" and header.expression_type is None
    assert header.to_ext_fields() == ext


def test_pull_response_header_renders_every_value_as_a_string() -> None:
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=5, min_offset=0, max_offset=9
    )

    assert header.to_ext_fields() == {
        "suggestWhichBrokerId": "0",
        "nextBeginOffset": "5",
        "minOffset": "0",
        "maxOffset": "9",
    }


def test_send_response_header_carries_region_and_trace_and_omits_null_transaction_id() -> None:
    header = SendMessageResponseHeader(
        msg_id="0A00000100002A9F0000000000001234",
        queue_id=1,
        queue_offset=7,
        msg_region="DefaultRegion",
        trace_on=True,
    )

    assert header.to_ext_fields() == {
        "msgId": "0A00000100002A9F0000000000001234",
        "queueId": "1",
        "queueOffset": "7",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }


def test_query_message_unique_key_flag_is_exactly_true() -> None:
    ext = {"topic": "t", "key": "k", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9"}

    assert QueryMessageRequestHeader.from_ext_fields(ext).unique_key_query is False
    assert QueryMessageRequestHeader.from_ext_fields(dict(ext, _UNIQUE_KEY_QUERY="true")).unique_key_query
    assert not QueryMessageRequestHeader.from_ext_fields(dict(ext, _UNIQUE_KEY_QUERY="TRUE")).unique_key_query
    assert QueryMessageRequestHeader.from_ext_fields(ext).to_ext_fields() == ext


def test_end_transaction_header_reads_commit_or_rollback_and_defaults() -> None:
    header = EndTransactionRequestHeader.from_ext_fields(
        {
            "producerGroup": "pg",
            "tranStateTableOffset": "3",
            "commitLogOffset": "4096",
            "commitOrRollback": "8",
            "msgId": "ID",
        }
    )

    assert header.commit_or_rollback == 8 and header.commit_log_offset == 4096
    assert header.from_transaction_check is False and header.transaction_id is None


def test_create_topic_order_defaults_to_false_as_java_initialises_it() -> None:
    header = CreateTopicRequestHeader.from_ext_fields(
        {
            "topic": "t",
            "defaultTopic": "TBW102",
            "readQueueNums": "8",
            "writeQueueNums": "8",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
        }
    )

    assert header.order is False and header.topic_sys_flag is None


def test_register_broker_optional_fields_default_to_uncompressed_and_no_crc() -> None:
    header = RegisterBrokerRequestHeader.from_ext_fields(
        {
            "brokerName": "broker-a",
            "brokerAddr": "10.0.0.1:10911",
            "clusterName": "DefaultCluster",
            "haServerAddr": "10.0.0.1:10912",
            "brokerId": "0",
        }
    )

    assert (header.broker_id, header.compressed, header.body_crc32) == (0, False, 0)


def test_parse_request_header_dispatches_by_code() -> None:
    assert parse_request_header(RequestCode.SEND_MESSAGE_V2, SAME_SEND_V2) == parse_request_header(
        RequestCode.SEND_MESSAGE, CPP_V1_SEND
    )
    assert parse_request_header(RequestCode.HEART_BEAT, {}) is None
    assert parse_request_header(9999, {"x": "y"}) is None


def _sample_value(annotation: object) -> object:
    if annotation is bool or annotation == (bool | None):
        return True
    if annotation is int or annotation == (int | None):
        return -7
    return "sample value"


@pytest.mark.parametrize(
    "header_type",
    sorted(
        set(REQUEST_HEADER_TYPES.values()) | set(RESPONSE_HEADER_TYPES.values()), key=lambda t: t.__name__
    ),
)
def test_every_header_round_trips_through_ext_fields(header_type: type[CommandHeader]) -> None:
    hints = typing.get_type_hints(header_type)
    fields = dataclasses.fields(header_type)  # type: ignore[arg-type]
    values = {f.name: _sample_value(hints[f.name]) for f in fields}
    header = header_type(**values)

    ext = header.to_ext_fields()

    assert all(type(v) is str for v in ext.values())
    assert header_type.from_ext_fields(ext) == header


def test_unknown_keys_are_ignored() -> None:
    header = SendMessageRequestHeader.from_ext_fields(dict(CPP_V1_SEND, somethingNew="x"))

    assert header.topic == "TopicTest"
