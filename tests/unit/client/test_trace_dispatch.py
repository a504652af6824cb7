"""The trace dispatcher without a broker: how it cuts a batch into trace messages, its queue limit, and that a
name server nobody answers on costs the traced client nothing but failed (counted) trace sends."""

from __future__ import annotations

import asyncio
import socket

from rocketstore.client.trace import (
    RMQ_SYS_TRACE_TOPIC,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace_data,
)
from rocketstore.client.trace_dispatch import TraceDispatcher, trace_group_name
from rocketstore.client.trace_producer import pub_message_type


def pub(topic: str, msg_id: str, keys: str | None = None, region: str = "DefaultRegion") -> TraceContext:
    return TraceContext(TraceType.Pub, 1, region, "g", beans=(TraceBean(topic=topic, msg_id=msg_id, keys=keys),))


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_trace_group_names_the_client_group_and_kind_and_counts() -> None:
    first, second = trace_group_name("orders", "PRODUCE"), trace_group_name("orders", "CONSUME")
    assert first.startswith("_INNER_TRACE_PRODUCER-orders-PRODUCE-")
    assert second.startswith("_INNER_TRACE_PRODUCER-orders-CONSUME-")
    assert int(second.rsplit("-", 1)[1]) > int(first.rsplit("-", 1)[1])


def test_a_batch_becomes_one_message_per_topic_and_region_with_every_key() -> None:
    d = TraceDispatcher("127.0.0.1:1", "g", "PRODUCE")
    assert d.trace_topic == RMQ_SYS_TRACE_TOPIC
    batch = [pub("A", "1", "k1 k2"), pub("B", "2"), pub("A", "3", "k2"), pub("A", "4", region="other")]
    messages = d._messages(batch)
    assert [keys for _, keys in messages] == [["1", "k1", "k2", "3"], ["2"], ["4"]]
    assert [[c.bean.msg_id for c in decode_trace_data(body)] for body, _ in messages] == [["1", "3"], ["2"], ["4"]]


def test_a_group_is_cut_once_its_text_reaches_the_limit() -> None:
    d = TraceDispatcher("127.0.0.1:1", "g", "PRODUCE", max_message_chars=100)
    batch = [pub("A", f"id-{i:03d}") for i in range(5)]
    messages = d._messages(batch)
    assert len(messages) > 1
    assert [c.bean.msg_id for body, _ in messages for c in decode_trace_data(body)] == [f"id-{i:03d}" for i in range(5)]
    record_chars = len(messages[-1][0]) // len(decode_trace_data(messages[-1][0]))
    for body, _ in messages[:-1]:  # cut right after the record that reached the limit
        assert len(body) >= 100 > len(body) - record_chars


def test_a_record_that_cannot_be_written_is_dropped_alone() -> None:
    d = TraceDispatcher("127.0.0.1:1", "g", "PRODUCE")
    bad = TraceContext(TraceType.Pub, 1, beans=(TraceBean(topic="A", msg_id="x", tags="a\x02b"),))
    [(_, keys)] = d._messages([bad, pub("A", "ok")])
    assert keys == ["ok"] and d.discarded == 1


def test_a_blank_trace_topic_means_the_default_and_a_custom_one_is_kept() -> None:
    assert TraceDispatcher("127.0.0.1:1", "g", "CONSUME", trace_topic="  ").trace_topic == RMQ_SYS_TRACE_TOPIC
    assert TraceDispatcher("127.0.0.1:1", "g", "CONSUME", trace_topic="MyTrace").trace_topic == "MyTrace"


def test_appends_past_the_limit_are_dropped_and_unreachable_servers_only_fail_trace_sends() -> None:
    async def go() -> TraceDispatcher:
        d = TraceDispatcher(f"127.0.0.1:{closed_port()}", "g", "PRODUCE", queue_limit=2, send_timeout_s=1.0)
        assert d.append(pub("A", "1")) and d.append(pub("A", "2"))
        assert not d.append(pub("A", "3"))  # the worker has not run yet: the queue is full
        await asyncio.wait_for(d.close(), 30)
        assert not d.append(pub("A", "4"))  # closed
        return d

    d = asyncio.run(go())
    assert d.discarded == 2
    assert d.failed_sends == 1 and d.sent_messages == 0  # both contexts in one message, which failed


def test_the_pub_message_type_follows_the_properties_as_java_sets_it() -> None:
    assert pub_message_type(None) is MessageType.Normal_Msg
    assert pub_message_type({"TRAN_MSG": "true"}) is MessageType.Trans_Msg_Half
    assert pub_message_type({"TRAN_MSG": "true", "DELAY": "3"}) is MessageType.Delay_Msg
    assert pub_message_type({"__STARTDELIVERTIME": "1"}) is MessageType.Delay_Msg


def test_a_name_server_that_never_answers_holds_at_most_max_in_flight_trace_sends() -> None:
    async def go() -> tuple[TraceDispatcher, int]:
        silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        try:
            d = TraceDispatcher(f"127.0.0.1:{silent.getsockname()[1]}", "g", "PRODUCE", batch_size=1,
                                linger_s=0.0, send_timeout_s=0.2, max_in_flight=2)
            for topic in "ABCDE":  # one trace message each
                assert d.append(pub(topic, topic))
            most = 0
            while d.failed_sends < 5:
                most = max(most, len(d._sending))
                await asyncio.sleep(0.01)
            await asyncio.wait_for(d.close(), 30)
            return d, most
        finally:
            silent.close()

    d, most = asyncio.run(go())
    assert most == 2  # the cap was reached and never passed
    assert d.failed_sends == 5 and d.sent_messages == 0 and d.discarded == 0
