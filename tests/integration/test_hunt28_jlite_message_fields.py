"""What a lite pull consumer's poll() (and a push consumer's handler: the pull loop is shared) hands out
carries what 4.9.3's consumers add to a pulled message and what its MessageExt exposes.

Captured from 4.9.3 (session 28, jlite): DefaultLitePullConsumer.poll() of a message sent with tags TA,
keys "K1 K2" and the user property p=v, alone in its queue, against the 4.9.3 broker:

    props {CLUSTER=DefaultCluster, KEYS=K1 K2, MAX_OFFSET=1, MIN_OFFSET=0, TAGS=TA, UNIQ_KEY=..., p=v}
    storeHost /127.0.0.1:42211 bornHost /127.0.0.1:54326 sysFlag 0

PullAPIWrapper.processPullResult puts the pull's minOffset / maxOffset in every message's MIN_OFFSET /
MAX_OFFSET properties (what a consumer reads its backlog from: MAX_OFFSET - queueOffset).  Ours had neither
property, nor the born / store host and sysFlag the stored record holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import arun, create_topic

from rocketstore.client import ConsumeFromWhere, LitePullConsumer, Producer

FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    with LocalCluster(tmp_path / "store") as c:
        yield c


def test_a_polled_message_carries_the_pull_bounds_and_its_hosts(cluster: LocalCluster) -> None:
    topic = "TLiteFields"

    async def main() -> None:
        await create_topic(cluster, topic, 1)
        async with Producer(cluster.namesrv_addr, "fields-producer") as producer:
            sent = await producer.send(topic, b"hello", tags="TA", keys=["K1", "K2"], properties={"p": "v"})
            for i in range(4):
                await producer.send(topic, f"more{i}".encode(), tags="TB")
        async with LitePullConsumer(cluster.namesrv_addr, "GLiteFields", **FAST) as consumer:
            consumer.subscribe(topic, "*")
            got = []
            while len(got) < 5:
                got += await consumer.poll(5.0)
        first = got[0]
        assert first.msg_id == sent.msg_id
        assert {k: v for k, v in first.properties.items() if k not in ("CLUSTER", "MAX_OFFSET")} == {
            "KEYS": "K1 K2", "TAGS": "TA", "UNIQ_KEY": sent.msg_id, "p": "v", "MIN_OFFSET": "0"}
        # the bounds of the pull that found it: the queue's min offset, and its max (1 to 5: the pull may have
        # come before the later sends)
        assert 1 <= int(first.properties["MAX_OFFSET"]) <= 5
        assert all(int(m.properties["MAX_OFFSET"]) > m.queue_offset for m in got)
        assert str(first.store_host) == cluster.broker_addr
        assert first.born_host is not None and first.born_host.ip_text() == "127.0.0.1"
        assert first.sys_flag == 0

    arun(main)
