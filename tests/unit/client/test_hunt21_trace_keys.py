"""The trace dispatcher cuts a trace message before its KEYS pass max_keys_bytes (a broker refuses properties past
32,767 bytes), and every message it cuts is keyed by every record it carries."""

from __future__ import annotations

from rocketstore.client.trace import TraceBean, TraceContext, TraceType, decode_trace_data
from rocketstore.client.trace_dispatch import TraceDispatcher


def sub(trace_type: TraceType, msg_id: str, keys: str | None = None) -> TraceContext:
    return TraceContext(trace_type, 1, None, "g", request_id="r", beans=(TraceBean(topic="T", msg_id=msg_id, keys=keys),))


def test_a_cut_message_is_keyed_by_its_records_even_when_the_one_before_had_the_same_keys() -> None:
    d = TraceDispatcher("127.0.0.1:1", "g", "CONSUME", max_keys_bytes=29)
    batch = [sub(TraceType.SubBefore, "X", "shared"), sub(TraceType.SubBefore, "Y" * 20),
             sub(TraceType.SubAfter, "X", "shared")]
    messages = d._messages(batch)
    assert [keys for _, keys in messages] == [["X", "shared"], ["Y" * 20], ["X", "shared"]]
    assert [[c.trace_type for c in decode_trace_data(body)] for body, _ in messages] == [
        [TraceType.SubBefore], [TraceType.SubBefore], [TraceType.SubAfter]]


def test_the_default_limit_keeps_a_trace_messages_keys_within_the_brokers_properties_limit() -> None:
    d = TraceDispatcher("127.0.0.1:1", "g", "PRODUCE")
    batch = [TraceContext(TraceType.Pub, 1, "DefaultRegion", "g", beans=(TraceBean(
        topic="T", msg_id=f"{i:032X}", keys=" ".join(f"{i}-{j}-" + "k" * 290 for j in range(10))),))
        for i in range(100)]
    batch.append(TraceContext(TraceType.Pub, 1, "DefaultRegion", "g", beans=(TraceBean(
        topic="T", msg_id=",".join(f"B{i:031X}" for i in range(1200))),)))
    messages = d._messages(batch)
    assert all(len(" ".join(keys).encode()) <= 32_000 for _, keys in messages)
    carried = [c.bean.msg_id for body, _ in messages for c in decode_trace_data(body)]
    assert carried == [c.bean.msg_id for c in batch]
    assert all(f"{i:032X}" in keys for i in range(100) for body, keys in messages if f"{i:032X}" in body)
    assert "B" + f"{0:031X}" in messages[-1][1]  # a batch's own ids come before its joined id
