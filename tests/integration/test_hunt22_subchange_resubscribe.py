"""A running push consumer's subscription replaced while its pull is held at the broker (session 22's hunt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.remoting.transport import run

#: a long poll far longer than the test's sends: the pull parked with the old expression is still held when
#: the messages of the new one arrive
SETTINGS: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                            "route_refresh_interval_s": 0.5, "long_poll_ms": 20_000,
                            "pull_delay_on_error_s": 0.2}


def test_a_replaced_tag_expression_applies_to_the_pull_held_with_the_old_one(tmp_path: Path) -> None:
    """subscribe(topic, "new") while the queue's pull waits at the broker with "old": the held pull was
    answered by the old filter, which handed over a message tagged "old" and moved past the one tagged "new"
    (lost to the group).  The answer of a pull whose expression was replaced meanwhile is dropped and the
    same offset pulled again with the new expression."""
    topic, group = "Hunt22Resubscribe", "hunt22-resubscribe-group"
    got: list[tuple[str | None, str]] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend((m.tags, m.body.decode()) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        def committed() -> int:
            return cluster.call(lambda: cluster.broker.offsets.offsets(group, topic).get(0, -1))

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt22-resubscribe-producer") as producer:
                async with PushConsumer(cluster.namesrv_addr, group, {topic: "old"}, handle,
                                        **SETTINGS) as consumer:
                    await producer.send(topic, b"first", tags="old")
                    await eventually(lambda: ("old", "first") in got, 15, "the first message")
                    # the queue's next pull is now held at offset 1 with "old"
                    await eventually(lambda: committed() == 1, 15, "the first message's commit")
                    consumer.subscribe(topic, "new")
                    await producer.send(topic, b"wanted", tags="new")
                    await producer.send(topic, b"unwanted", tags="old")
                    await producer.send(topic, b"last", tags="new")
                    await eventually(lambda: ("new", "last") in got, 30, "the last message")
                    await eventually(lambda: committed() == 4, 15, "every offset to be committed")
            # (handlers run on a thread pool: the order of arrival in *got* is not the queue order)
            assert sorted(got) == [("new", "last"), ("new", "wanted"), ("old", "first")]

        run(go())
