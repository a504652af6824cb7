"""Consumer offsets as a user moves them under running push consumers (session 13's hunt): a topic deleted and
created again while its group consumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run

#: short periods so rebalances and commits happen within a test's patience
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}


def test_a_topic_deleted_and_created_again_is_consumed_from_its_new_start_and_commits_follow(
        tmp_path: Path) -> None:
    """The consumer's offset 5 is illegal in the new, empty queue; the broker moves it to 0.  The offsets
    committed afterwards are those of the new queue: 4.9.3 drops the process queue on OFFSET_ILLEGAL and takes
    the queue again with a fresh one, so the old queue's highest offset is forgotten.  Keeping it committed 5
    after the first two new messages, and the next consumer of the group skipped offsets 2..4."""
    topic, group = "Hunt13Recreated", "hunt13-recreated-group"
    got: list[str] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        got.extend(m.body.decode() for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        def committed() -> int:
            return cluster.call(lambda: cluster.broker.offsets.offsets(group, topic).get(0, -1))

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt13-producer") as producer:
                async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
                    for i in range(5):
                        await producer.send(topic, f"old{i}".encode())
                    await eventually(lambda: committed() == 5, 15, "the old messages to be committed")
                    async with AdminClient(cluster.namesrv_addr) as admin:
                        await admin.delete_topic(topic)
                        await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=1,
                                                 write_queue_nums=1)
                    await eventually(lambda: committed() == 0, 15, "the illegal offset to be moved to 0")
                    for i in range(2):
                        await producer.send(topic, f"new{i}".encode())
                    await eventually(lambda: len(set(got)) == 7, 15, "the first new messages")
                    await eventually(lambda: committed() == 2, 15, "the new queue's offset to be committed")
                assert committed() == 2, "the shutdown commits the new queue's offset, not the old one's"
                for i in range(2, 6):
                    await producer.send(topic, f"new{i}".encode())
                async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
                    await eventually(lambda: len(set(got)) == 11, 15, "the next consumer to get the rest")
            # handlers run on a thread pool: the order of arrival in *got* is not the queue order
            assert set(got) == {f"old{i}" for i in range(5)} | {f"new{i}" for i in range(6)}

        run(go())
