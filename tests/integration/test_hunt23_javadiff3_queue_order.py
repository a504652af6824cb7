"""A group consumer sorts a topic's queues as Java's MessageQueue.compareTo does (names by UTF-16 code unit)
before its allocation strategy shares them: every member of a mixed Java/Python group must see the same
list, or two members take one queue and another queue has none.  Python's own order of names differs from
Java's for characters past U+FFFF (a surrogate pair sorts below U+E000..U+FFFF in Java, above in Python);
a broker name is free text, so a route can hold such names.  The expected order is what 4.9.3's
Collections.sort of these MessageQueues gives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within

from rocketstore.client import ConsumedMessage, ConsumeStatus, PushConsumer
from rocketstore.client.allocate import allocate_averagely

TOPIC, GROUP = "Hunt23QueueOrder", "hunt23-queue-order"
HIGH, PAIR = "b\uffff", "b\U0001F600"  # one name ends in U+FFFF, the other in a surrogate pair
#: 4.9.3's Collections.sort(mqAll) of the topic's four queues (two on each broker)
JAVA_ORDER = [(PAIR, 0), (PAIR, 1), (HIGH, 0), (HIGH, 1)]


def test_queues_reach_the_strategy_in_java_order(tmp_path: Path) -> None:
    seen: list[list[tuple[str, int]]] = []

    def recording(client_id: str, queues: Sequence[Any], client_ids: Sequence[str]) -> list[Any]:
        seen.append([(q.broker_name, q.queue_id) for q in queues])
        return allocate_averagely(client_id, queues, client_ids)

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async def scenario(cluster: LocalCluster) -> None:
        consumer = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle, rebalance_interval_s=0.5,
                                long_poll_ms=1000, allocate_strategy=recording)
        await consumer.start()
        try:
            await eventually(lambda: any(len(s) == 4 for s in seen), 30, "a rebalance of the four queues")
        finally:
            await consumer.shutdown()

    with LocalCluster(tmp_path / "a", broker_name=HIGH) as cluster:
        other = cluster.start_broker(tmp_path / "b", broker_name=PAIR)
        try:
            cluster.create_topic_on(TOPIC, [cluster.broker_addr, other.address], queues=2)
            run_within(lambda: scenario(cluster), 90)  # type: ignore[arg-type]
        finally:
            cluster.run(other.close())
    assert [s for s in seen if len(s) == 4][0] == JAVA_ORDER
