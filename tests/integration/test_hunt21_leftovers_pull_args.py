"""``PullConsumer.pull`` refuses a negative offset and a max_count not above 0 before sending, in 4.9.3's
words (DefaultMQPullConsumerImpl.pullSyncImpl / pullAsyncImpl: MQClientException "offset < 0", checked
first, then "maxNums <= 0", with the FAQ url attached).  Before, they went to the broker, which answered
them with a pull result as if they meant something."""

from __future__ import annotations

import pytest
from local_cluster import LocalCluster

from rocketstore.client import ClientError, MessageQueue, PullConsumer
from rocketstore.client.errors import FAQ_SUFFIX

TOPIC = "Hunt21LeftoversPullArgs"


@pytest.mark.parametrize(("offset", "max_count", "words"), [
    (-1, 32, "offset < 0"),
    (0, 0, "maxNums <= 0"),
    (0, -3, "maxNums <= 0"),
    (-1, 0, "offset < 0"),  # the offset is checked first, as 4.9.3's
])
def test_a_pull_with_a_bad_offset_or_count_is_refused_before_it_is_sent(
        cluster: LocalCluster, offset: int, max_count: int, words: str) -> None:
    cluster.create_topic(TOPIC)
    mq = MessageQueue(TOPIC, "broker-a", 0)

    async def go() -> None:
        async with PullConsumer(cluster.namesrv_addr, "hunt21-leftovers-pull-args") as consumer:
            with pytest.raises(ClientError) as raised:
                await consumer.pull(mq, offset, max_count)
            assert str(raised.value) == f"{words}{FAQ_SUFFIX}"
            result = await consumer.pull(mq, 0, 1)  # a good pull is sent and answered
            assert result.status and result.next_begin_offset >= 0

    cluster.run(go(), 60)
