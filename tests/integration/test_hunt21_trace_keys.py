"""A trace message's KEYS against a broker's 32,767-byte properties limit: the trace of a large batch send and
of a burst of sends with many keys reaches the trace topic (the dispatcher cuts a trace message before its
KEYS pass max_keys_bytes) instead of being refused as MESSAGE_ILLEGAL with every record it carried."""

from __future__ import annotations

import asyncio
from pathlib import Path

from local_cluster import LocalCluster, run_within
from test_trace import types_of, wait_for_trace

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.trace import TraceType

TEST_TIMEOUT_S = 120.0


def test_the_pub_of_a_batch_of_600_messages_reaches_the_trace_topic_and_each_id_finds_it(tmp_path: Path) -> None:
    # 600 msgIds are 19,800 bytes joined; each id a key of its own as well was 39,600 bytes of KEYS: refused
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt21TraceBatch")

        async def go() -> tuple[list[str], int, int]:
            async with Producer(cluster.namesrv_addr, "hunt21-trace-batch", enable_trace=True) as producer:
                result = await producer.send_batch("Hunt21TraceBatch", [OutgoingMessage(b"m") for _ in range(600)])
                dispatcher = producer.trace.dispatcher  # type: ignore[union-attr]
            ids = result.msg_id.split(",")
            for msg_id in (ids[0], ids[299], ids[-1]):
                trace = await wait_for_trace(cluster.namesrv_addr, msg_id, lambda t: types_of(t) == ["Pub"],
                                             f"the batch's Pub found by {msg_id}")
                assert trace.views[0].bean.msg_id == result.msg_id
            return ids, dispatcher.sent_messages, dispatcher.failed_sends

        ids, sent, failed = run_within(go, TEST_TIMEOUT_S)
        assert len(ids) == 600 and (sent, failed) == (1, 0)


def test_a_burst_of_sends_with_many_keys_is_traced_in_trace_messages_the_broker_takes(tmp_path: Path) -> None:
    # 300 sends, each with ten 300-character keys: ten Pubs in one trace message carry 30,000 bytes of keys
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt21TraceKeys")

        def keys_of(i: int) -> str:
            return " ".join(f"order-{i:03d}-{j}-" + "k" * 288 for j in range(10))

        async def go() -> tuple[list[str], int, int]:
            async with Producer(cluster.namesrv_addr, "hunt21-trace-keys", enable_trace=True) as producer:
                results = await asyncio.gather(*[producer.send("Hunt21TraceKeys", b"m", keys=keys_of(i))
                                                 for i in range(300)])
                dispatcher = producer.trace.dispatcher  # type: ignore[union-attr]
            ids = [r.msg_id for r in results]
            for msg_id in (ids[0], ids[150], ids[-1]):
                trace = await wait_for_trace(cluster.namesrv_addr, msg_id, lambda t: types_of(t) == ["Pub"],
                                             f"the Pub of {msg_id}")
                view = trace.views[0]
                assert view.context.trace_type is TraceType.Pub and view.bean.keys == keys_of(ids.index(msg_id))
            return ids, dispatcher.sent_messages, dispatcher.failed_sends

        ids, sent, failed = run_within(go, TEST_TIMEOUT_S)
        assert len(set(ids)) == 300 and failed == 0 and sent >= 1
