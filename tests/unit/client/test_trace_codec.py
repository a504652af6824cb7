"""The trace data codec against 4.9.3's TraceDataEncoder format: fixed records laid out field by field as the
Java encoder's StringBuilder writes them (and as the C++ client 2.1 writes its own), round trips of any
field values, and malformed input, which must raise TraceDataError and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketstore.client.trace import (
    CONTENT_SEPARATOR,
    FIELD_SEPARATOR,
    MessageType,
    TraceBean,
    TraceContext,
    TraceDataError,
    TraceType,
    decode_trace_data,
    encode_trace_context,
    encode_trace_contexts,
    trace_keys,
)

MSG_ID = "7F0000010B5A18B4AAC2733E33A00000"
OFFSET_MSG_ID = "7F00000100002A9F0000000000000AB6"


def record(*fields: object) -> str:
    """One record as Java's encoder lays it out: fields joined by char 1, ended by char 2."""
    return CONTENT_SEPARATOR.join(str(f) for f in fields) + FIELD_SEPARATOR


# --- what the Java client writes --------------------------------------------------------------------------

JAVA_PUB = record("Pub", 1732600000123, "DefaultRegion", "order-producer", "Orders", MSG_ID, "TagA", "order-1 order-2",
                  "127.0.0.1:10911", 42, 7, 0, OFFSET_MSG_ID, "true")
JAVA_SUB_BEFORE = record("SubBefore", 1732600000200, "null", "order-consumer", "REQ0001", MSG_ID, 0, "order-1 order-2")
JAVA_SUB_AFTER = record("SubAfter", "REQ0001", MSG_ID, 3, "false", "order-1 order-2", 4, 1732600000210,
                        "order-consumer")
JAVA_END = record("EndTransaction", 1732600000300, "DefaultRegion", "tx-producer", "Orders", MSG_ID, "null", "null",
                  "127.0.0.1:10911", 2, MSG_ID, "ROLLBACK_MESSAGE", "true")


def test_a_java_pub_record_decodes_field_by_field() -> None:
    [ctx] = decode_trace_data(JAVA_PUB)
    assert ctx.trace_type is TraceType.Pub
    assert (ctx.timestamp_ms, ctx.region_id, ctx.group, ctx.cost_time_ms, ctx.success) == (
        1732600000123, "DefaultRegion", "order-producer", 7, True)
    assert ctx.bean == TraceBean(topic="Orders", msg_id=MSG_ID, offset_msg_id=OFFSET_MSG_ID, tags="TagA",
                                 keys="order-1 order-2", store_host="127.0.0.1:10911", body_length=42,
                                 msg_type=MessageType.Normal_Msg)


def test_java_consume_records_decode_with_null_region_and_their_request_id() -> None:
    before, after = decode_trace_data(JAVA_SUB_BEFORE + JAVA_SUB_AFTER)
    assert (before.trace_type, before.timestamp_ms, before.region_id, before.group, before.request_id) == (
        TraceType.SubBefore, 1732600000200, None, "order-consumer", "REQ0001")
    assert (before.bean.msg_id, before.bean.retry_times, before.bean.keys) == (MSG_ID, 0, "order-1 order-2")
    assert (after.trace_type, after.request_id, after.cost_time_ms, after.success, after.context_code) == (
        TraceType.SubAfter, "REQ0001", 3, False, 4)
    assert (after.timestamp_ms, after.group, after.bean.msg_id, after.bean.keys) == (
        1732600000210, "order-consumer", MSG_ID, "order-1 order-2")


def test_a_java_end_transaction_record_decodes_with_its_state() -> None:
    [ctx] = decode_trace_data(JAVA_END)
    b = ctx.bean
    assert (ctx.trace_type, ctx.group, b.topic, b.tags, b.keys, b.msg_type) == (
        TraceType.EndTransaction, "tx-producer", "Orders", None, None, MessageType.Trans_msg_Commit)
    assert (b.transaction_id, b.transaction_state, b.from_transaction_check) == (MSG_ID, "ROLLBACK_MESSAGE", True)


def test_what_we_encode_is_byte_for_byte_what_the_java_encoder_writes() -> None:
    pub = TraceContext(TraceType.Pub, 1732600000123, "DefaultRegion", "order-producer", cost_time_ms=7,
                       beans=(TraceBean(topic="Orders", msg_id=MSG_ID, offset_msg_id=OFFSET_MSG_ID, tags="TagA",
                                        keys="order-1 order-2", store_host="127.0.0.1:10911", body_length=42,
                                        msg_type=MessageType.Normal_Msg),))
    bean = TraceBean(msg_id=MSG_ID, keys="order-1 order-2")
    before = TraceContext(TraceType.SubBefore, 1732600000200, None, "order-consumer", request_id="REQ0001",
                          beans=(bean,))
    after = TraceContext(TraceType.SubAfter, 1732600000210, None, "order-consumer", cost_time_ms=3, success=False,
                         request_id="REQ0001", context_code=4, beans=(bean,))
    end = TraceContext(TraceType.EndTransaction, 1732600000300, "DefaultRegion", "tx-producer", beans=(TraceBean(
        topic="Orders", msg_id=MSG_ID, store_host="127.0.0.1:10911", msg_type=MessageType.Trans_msg_Commit,
        transaction_id=MSG_ID, transaction_state="ROLLBACK_MESSAGE", from_transaction_check=True),))
    assert encode_trace_contexts([pub, before, after, end]) == JAVA_PUB + JAVA_SUB_BEFORE + JAVA_SUB_AFTER + JAVA_END


def test_a_consume_context_of_several_messages_writes_one_record_each() -> None:
    beans = (TraceBean(msg_id="A", keys="k1"), TraceBean(msg_id="B"))
    text = encode_trace_context(TraceContext(TraceType.SubAfter, 5, None, "g", cost_time_ms=1, request_id="R",
                                             context_code=0, beans=beans))
    assert text == record("SubAfter", "R", "A", 1, "true", "k1", 0, 5, "g") + record(
        "SubAfter", "R", "B", 1, "true", "null", 0, 5, "g")
    assert [c.bean.msg_id for c in decode_trace_data(text)] == ["A", "B"]


def test_older_and_newer_java_pub_layouts_decode() -> None:
    base = ["Pub", 1, "r", "g", "T", MSG_ID, "t", "k", "h:1", 5, 2, 3]
    [old] = decode_trace_data(record(*base, "false"))  # 13 fields: no offsetMsgId yet
    assert (old.success, old.bean.offset_msg_id, old.bean.msg_type) == (False, "", MessageType.Delay_Msg)
    [with_host] = decode_trace_data(record(*base, OFFSET_MSG_ID, "true", "10.0.0.7", "later-field"))
    assert (with_host.bean.offset_msg_id, with_host.success, with_host.bean.client_host) == (
        OFFSET_MSG_ID, True, "10.0.0.7")


# --- what the C++ client 2.1 writes ---------------------------------------------------------------------

def test_cpp_records_decode_short_sub_after_and_dkey_placeholder() -> None:
    text = (record("Pub", 1732600000123, "DefaultRegion", "cpp2-producer", "T", MSG_ID, "TagA", "key-1",
                   "127.0.0.1:10911", 12, 1, 0, OFFSET_MSG_ID, "true")
            + record("SubBefore", 1732600000200, "DEFAULT_REGION", "cpp-group", "REQ", MSG_ID, 0, "dKey")
            + record("SubAfter", "REQ", MSG_ID, 0, "true", "dKey"))
    pub, before, after = decode_trace_data(text)
    assert (pub.group, pub.bean.keys, pub.bean.store_host) == ("cpp2-producer", "key-1", "127.0.0.1:10911")
    assert (before.region_id, before.bean.keys) == ("DEFAULT_REGION", "dKey")
    assert (after.timestamp_ms, after.group, after.context_code, after.success) == (None, None, None, True)


# --- keys --------------------------------------------------------------------------------------------------

def test_trace_keys_are_the_msg_id_and_each_key_without_repeats() -> None:
    ctx = TraceContext(TraceType.SubBefore, 1, None, "g", beans=(
        TraceBean(msg_id="A", keys="k1  k2"), TraceBean(msg_id="B", keys="k2"), TraceBean(msg_id="C")))
    assert trace_keys(ctx) == ["A", "k1", "k2", "B", "C"]
    batch = TraceContext(TraceType.Pub, 1, beans=(TraceBean(msg_id="A,B"),))
    assert trace_keys(batch) == ["A", "B", "A,B"]  # the ids a query asks for first (hunt 21)


# --- malformed input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, reason", [
    (record("Pub", 1, "r", "g", "T", "id", "t", "k", "h", 5, 2), "needs at least 13 fields"),
    (record("Pub", "soon", "r", "g", "T", "id", "t", "k", "h", 5, 2, 0, "o", "true"), "timestamp is not a number"),
    (record("Pub", 1, "r", "g", "T", "id", "t", "k", "h", 5, 2, 9, "o", "true"), "unknown msgType ordinal 9"),
    (record("Pub", 1, "r", "g", "T", "id", "t", "k", "h", 5, 2, 0, "o", "yes"), "success is not true or false"),
    (record("Pub", 1, "r", "g", "T", "id", "t", "k", "h", 1 << 31, 2, 0, "o", "true"), "bodyLength out of range"),
    (record("SubBefore", 1, "r", "g", "R", "id", 0), "needs at least 8 fields"),
    (record("SubAfter", "R", "id", "fast", "true", "k"), "costTime is not a number"),
    (record("SubAfter", "R", "id", 1, "true", "k", 0, "x", "g"), "timestamp is not a number"),
    (record("EndTransaction", 1, "r", "g", "T", "id", "t", "k", "h", 2, "tx", "MAYBE", "false"),
     "unknown transaction state"),
    (record("Recall", 1, "r"), "unknown trace type 'Recall'"),
    (record("", 1), "unknown trace type ''"),
])
def test_malformed_records_raise_trace_data_error(text: str, reason: str) -> None:
    with pytest.raises(TraceDataError, match=reason):
        decode_trace_data(text)


def test_with_an_errors_list_the_good_records_around_a_bad_one_still_decode() -> None:
    errors: list[TraceDataError] = []
    got = decode_trace_data(JAVA_PUB + record("Pub", "x") + JAVA_SUB_AFTER, errors=errors)
    assert [c.trace_type for c in got] == [TraceType.Pub, TraceType.SubAfter]
    assert len(errors) == 1 and errors[0].index == 1


def test_empty_records_are_skipped() -> None:
    assert decode_trace_data("") == []
    assert len(decode_trace_data(FIELD_SEPARATOR + JAVA_PUB + FIELD_SEPARATOR * 2)) == 1


def test_the_encoder_refuses_a_field_holding_a_separator_and_a_context_without_a_message() -> None:
    with pytest.raises(ValueError, match="separator"):
        encode_trace_context(TraceContext(TraceType.Pub, 1, beans=(TraceBean(tags="a\x01b"),)))
    with pytest.raises(ValueError, match="without a traced message"):
        encode_trace_context(TraceContext(TraceType.SubBefore, 1))
    with pytest.raises(ValueError, match="needs a timestamp"):
        encode_trace_context(TraceContext(TraceType.SubAfter, None, beans=(TraceBean(),)))


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_any_text_decodes_or_raises_trace_data_error(text: str) -> None:
    try:
        decode_trace_data(text)
    except TraceDataError:
        pass


@given(st.lists(st.sampled_from(["Pub", "SubBefore", "SubAfter", "EndTransaction", "1", "-2", "true", "null", "",
                                 "COMMIT_MESSAGE", "x"]), max_size=16))
def test_records_of_plausible_fields_decode_or_raise_trace_data_error(fields: list[str]) -> None:
    try:
        decode_trace_data(CONTENT_SEPARATOR.join(fields) + FIELD_SEPARATOR)
    except TraceDataError:
        pass


# --- round trips -------------------------------------------------------------------------------------------

#: a field's text: anything but the separators; an optional field also never the text "null" (its None)
TEXT = st.text(alphabet=st.characters(codec="utf-8", blacklist_characters="\x01\x02"), max_size=20)
OPTIONAL = st.none() | TEXT.filter(lambda s: s != "null")
INT = st.integers(-(1 << 31), (1 << 31) - 1)
LONG = st.integers(-(1 << 63), (1 << 63) - 1)
MSG_TYPE = st.sampled_from(list(MessageType))


@st.composite
def contexts(draw: st.DrawFn) -> TraceContext:
    kind = draw(st.sampled_from(list(TraceType)))
    stamp, group = draw(LONG), draw(OPTIONAL)
    if kind is TraceType.Pub:
        bean = TraceBean(topic=draw(TEXT), msg_id=draw(TEXT), offset_msg_id=draw(TEXT), tags=draw(OPTIONAL),
                         keys=draw(OPTIONAL), store_host=draw(TEXT), body_length=draw(INT), msg_type=draw(MSG_TYPE))
        return TraceContext(kind, stamp, draw(OPTIONAL), group, cost_time_ms=draw(INT), success=draw(st.booleans()),
                            beans=(bean,))
    if kind is TraceType.SubBefore:
        beans = draw(st.lists(st.builds(TraceBean, msg_id=TEXT, retry_times=INT, keys=OPTIONAL), min_size=1,
                              max_size=3))
        return TraceContext(kind, stamp, draw(OPTIONAL), group, request_id=draw(TEXT), beans=tuple(beans))
    if kind is TraceType.SubAfter:
        beans = draw(st.lists(st.builds(TraceBean, msg_id=TEXT, keys=OPTIONAL), min_size=1, max_size=3))
        return TraceContext(kind, stamp, None, group, cost_time_ms=draw(INT), success=draw(st.booleans()),
                            request_id=draw(TEXT), context_code=draw(INT), beans=tuple(beans))
    bean = TraceBean(topic=draw(TEXT), msg_id=draw(TEXT), tags=draw(OPTIONAL), keys=draw(OPTIONAL),
                     store_host=draw(TEXT), msg_type=draw(MSG_TYPE), transaction_id=draw(OPTIONAL),
                     transaction_state=draw(st.sampled_from(["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"])),
                     from_transaction_check=draw(st.booleans()))
    return TraceContext(kind, stamp, draw(OPTIONAL), group, beans=(bean,))


def _one_per_bean(ctx: TraceContext) -> list[TraceContext]:
    """What decoding *ctx*'s records gives: a context per bean, each with that bean alone."""
    return [TraceContext(ctx.trace_type, ctx.timestamp_ms, ctx.region_id, ctx.group, ctx.cost_time_ms, ctx.success,
                         ctx.request_id, ctx.context_code, (b,)) for b in ctx.beans]


@given(st.lists(contexts(), max_size=5))
def test_encoded_contexts_decode_back_to_the_same_values(ctxs: list[TraceContext]) -> None:
    decoded = decode_trace_data(encode_trace_contexts(ctxs))
    assert decoded == [one for ctx in ctxs for one in _one_per_bean(ctx)]
