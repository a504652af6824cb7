"""Look-ups by store time through a broker, with the messages' store times set (the store's put takes a
message's ``store_timestamp``): SEARCH_OFFSET_BY_TIMESTAMP answers 4.9.3's getOffsetInQueueByTime (the nearest
entry, a tie to the earlier one, the first / last entry for a time before / after them all) and
GET_EARLIEST_MSG_STORETIME the oldest message's store time (-1 for an empty queue), both from the Python
client as 4.9.3's MQAdmin.searchOffset / earliestMsgStoreTime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import PullConsumer
from rocketstore.client.route import MessageQueue
from rocketstore.message.record import Message
from rocketstore.remoting.transport import run

TOPIC = "LookTimes"
EMPTY = "LookTimesEmpty"
BASE_MS = 1_700_000_000_000
#: the store times (ms after BASE_MS) of queue 0's messages, at queue offsets 0..4
TIMES = (1000, 2000, 3000, 3000, 5000)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    root: Path = tmp_path_factory.mktemp("lookups-times")
    with LocalCluster(root / "store") as cluster:
        cluster.create_topic(TOPIC)
        cluster.create_topic(EMPTY)
        for i, t in enumerate(TIMES):
            message = Message.create(TOPIC, f"m{i}".encode(), store_timestamp=BASE_MS + t)
            assert cluster.call(lambda m=message: cluster.broker.store.put(m)).ok  # type: ignore[misc]
        cluster.wait_dispatched()
        yield cluster


def _search(cluster: LocalCluster, topic: str, timestamps: list[int]) -> list[int]:
    async def go() -> list[int]:
        async with PullConsumer(cluster.namesrv_addr, "look-times") as consumer:
            mq = MessageQueue(topic, cluster.broker_name, 0)
            return [await consumer.search_offset(mq, BASE_MS + t) for t in timestamps]

    return run(go())


@pytest.mark.parametrize(("after_base_ms", "offset"), [
    (-BASE_MS, 0),  # the epoch: before every message, the first
    (0, 0),
    (1000, 0),
    (1499, 0),
    (1500, 0),  # as near the message at 1000 as that at 2000: the earlier
    (1501, 1),
    (2000, 1),
    (4000, 3),  # 3000 and 5000 are as near: the later of the two stored at 3000
    (4001, 4),
    (5000, 4),
    (10**9, 4),  # after every message: the last
])
def test_search_offset_answers_the_nearest_message(cluster: LocalCluster, after_base_ms: int, offset: int) -> None:
    assert _search(cluster, TOPIC, [after_base_ms]) == [offset]


def test_search_offset_in_an_empty_queue_is_zero(cluster: LocalCluster) -> None:
    assert _search(cluster, EMPTY, [0, 10**9]) == [0, 0]


def test_earliest_message_time_of_a_queue(cluster: LocalCluster) -> None:
    async def go() -> tuple[int, int]:
        async with PullConsumer(cluster.namesrv_addr, "look-times") as consumer:
            return (await consumer.earliest_message_time(MessageQueue(TOPIC, cluster.broker_name, 0)),
                    await consumer.earliest_message_time(MessageQueue(EMPTY, cluster.broker_name, 0)))

    assert run(go()) == (BASE_MS + TIMES[0], -1)
