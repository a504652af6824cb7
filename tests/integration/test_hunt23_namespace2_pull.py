"""``namespace`` on the PullConsumer (4.9.3's DefaultMQPullConsumer with ClientConfig.namespace) against a
real name server + broker: the queues of ``T`` it lists, pulls from and commits offsets of are ``NS%T`` on the
brokers, under the group ``NS%G``, and what it hands back names ``T``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, eventually, run_within, wait_stored
from test_python_push_consumer import create_topic

from rocketstore.client import Producer, PullConsumer
from rocketstore.message.properties import PropertyName

TEST_TIMEOUT_S = 90.0
NS = "NsH23p"


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def test_a_namespaced_pull_consumer_reads_and_commits_in_the_namespace(tmp_path: Path) -> None:
    topic, group = "H23NsPull", "h23-ns-pull"
    wire_topic, wire_group = f"{NS}%{topic}", f"{NS}%{group}"
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> Any:
            await create_topic(cluster, wire_topic, queue_count=1)
            async with Producer(cluster.namesrv_addr, "h23-ns-pull-producer", namespace=NS) as producer:
                sent = await producer.send(topic, b"hello")
            async with PullConsumer(cluster.namesrv_addr, group, namespace=NS) as consumer, \
                    PullConsumer(cluster.namesrv_addr, wire_group) as plain:
                [mq] = await consumer.queues(topic)
                assert mq.topic == topic

                async def dispatched() -> bool:
                    return await consumer.max_offset(mq) == 1

                await eventually(dispatched, 30, "the message in the consume queue of NS%T")
                assert await consumer.min_offset(mq) == 0
                result = await consumer.pull(mq, 0)
                await consumer.commit_offset(mq, result.next_begin_offset)
                mine = await consumer.committed_offset(mq)
                [wire_mq] = await plain.queues(wire_topic)
                theirs = await plain.committed_offset(wire_mq)
                await consumer.send_message_back(result.messages[0], mq.broker_name)  # named T: wrapped again
            return sent, result, mine, theirs

        sent, result, mine, theirs = arun(go)
        [parked] = wait_stored(cluster, "SCHEDULE_TOPIC_XXXX", 1, "the message sent back, waiting to retry")
    assert sent.message_queue.topic == topic
    assert [(m.topic, m.body) for m in result.messages] == [(topic, b"hello")]
    assert mine == theirs == 1, "the offset is the group NS%G's, of NS%T"
    assert parked.properties[PropertyName.REAL_TOPIC] == f"%RETRY%{wire_group}"
    assert parked.properties[PropertyName.RETRY_TOPIC] == wire_topic, "sent back as a message of NS%T"
