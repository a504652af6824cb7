"""The remark of a pull for a queue id beyond readQueueNums names the consumer as 4.9.3's
PullMessageProcessor does: ``channel.remoteAddress()`` formatted with %s, Java's InetSocketAddress text
``/ip:port``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool, run


def test_an_illegal_queue_id_remark_names_the_consumer_as_java_does(tmp_path: Path) -> None:
    topic = "RemarkTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        async def pull() -> Any:
            async with Producer(cluster.namesrv_addr, "remark-producer") as producer:
                await producer.send(topic, b"m0")  # creates the topic (4 queues)
            pool = ConnectionPool()
            try:
                header = PullMessageRequestHeader(
                    consumer_group="remark-group", topic=topic, queue_id=4, queue_offset=0, max_msg_nums=1,
                    sys_flag=0x4, commit_offset=0, suspend_timeout_ms=0, subscription="*", sub_version=0,
                    expression_type="TAG")
                request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
                return await pool.request(cluster.broker_addr, request, 10)
            finally:
                await pool.close()

        answer = run(pull())
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert re.fullmatch(r"queueId\[4\] is illegal, topic:\[RemarkTopic\] topicConfig\.readQueueNums:\[4\] "
                        r"consumer:\[/127\.0\.0\.1:\d+\]", answer.remark), answer.remark
