"""A heartbeat subscription in classFilterMode (4.9.3's Java ``subscribe(topic, fullClassName, source)``:
subString is the class name, no tags, no codes) filters nothing at the broker: 4.9.3's ExpressionMessageFilter
answers true in isMatchedByConsumeQueue and isMatchedByCommitLog when ``isClassFilterMode()``, so a pull
without the subscription flag gets every message of the queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, wait_stored

from rocketstore.client import Producer, decode_messages, group_requests
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketstore.remoting.transport import ConnectionPool, run


def test_a_class_filter_mode_subscription_gets_every_message(tmp_path: Path) -> None:
    topic, group = "ClassFilterTopic", "class-filter-group"
    with LocalCluster(tmp_path / "store") as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "class-filter-producer") as producer:
                for i, tag in enumerate(("TagA", "TagB", "")):
                    await producer.send(topic, f"m{i}".encode(), tags=tag or None, queue_id=0)

        run(send())
        wait_stored(cluster, topic, 3, "three messages", queues=4)

        async def pull() -> Any:
            pool = ConnectionPool()
            try:
                sub = SubscriptionData(topic, "org.example.MyMessageFilter", class_filter_mode=True,
                                       sub_version=1)
                consumer = ConsumerData(group, subscriptions=(sub,))
                data = HeartbeatData("127.0.0.1@class-filter", (), (consumer,))
                await group_requests.heartbeat(pool, cluster.broker_addr, data, 10)
                header = PullMessageRequestHeader(
                    consumer_group=group, topic=topic, queue_id=0, queue_offset=0, max_msg_nums=32,
                    sys_flag=0, commit_offset=0, suspend_timeout_ms=0, subscription="", sub_version=1,
                    expression_type="TAG")
                request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
                return await pool.request(cluster.broker_addr, request, 10)
            finally:
                await pool.close()

        answer = run(pull())
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "FOUND")
    assert [m.body for m in decode_messages(answer.body)] == [b"m0", b"m1", b"m2"]
    assert PullMessageResponseHeader.from_ext_fields(answer.ext_fields).next_begin_offset == 3
