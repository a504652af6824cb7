"""``mqadmin resetOffsetByTime -c`` (reset C++ clients) sends INVOKE_BROKER_TO_RESET_OFFSET with the request's
language CPP.  4.9.3's broker then tells the consumers in ResetOffsetBodyForC, but always answers the admin
with a ResetOffsetBody (Map<MessageQueue, Long>), the only form MQClientAPIImpl.invokeBrokerToResetOffset
decodes: an answer in the C++ list form fails the Java command."""

from __future__ import annotations

import asyncio
from collections import Counter

from local_cluster import LocalCluster
from serve_process import wait_for

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode, fastjson
from rocketstore.remoting.codes import LanguageCode
from rocketstore.remoting.transport import run

QUEUES = 4
FAST = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000}


def test_a_cpp_language_reset_request_is_answered_with_the_map_form_java_decodes(cluster: LocalCluster) -> None:
    topic, group = "ResetCplusTopic", "reset-cplus-group"
    seen: Counter[str] = Counter()

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.update(m.body.decode() for m in batch)
        return ConsumeStatus.CONSUME_SUCCESS

    def committed() -> dict[int, int]:
        return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, topic)))

    async def go() -> RemotingCommand:
        async with Producer(cluster.namesrv_addr, "reset-cplus-producer") as producer:
            for i in range(8):
                await producer.send(topic, f"m{i}".encode())
        async with PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, **FAST):
            await asyncio.to_thread(wait_for, lambda: len(seen) == 8, 20, "the eight messages")
            await asyncio.to_thread(wait_for, lambda: sum(committed().values()) == 8 and len(committed()) == QUEUES,
                                    20, "the offsets at the end")
            async with AdminClient(cluster.namesrv_addr) as admin:
                conn = await admin.pool.get(cluster.broker_addr)
                return await conn.request(RemotingCommand.request(
                    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                    {"topic": topic, "group": group, "timestamp": "0", "isForce": "true"},
                    language=LanguageCode.CPP), 5)

    answer = run(go())
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    table = fastjson.loads(answer.body)["offsetTable"]
    assert isinstance(table, dict), f"not ResetOffsetBody's Map<MessageQueue, Long>: {answer.body!r}"
    assert {dict(mq)["queueId"]: offset for mq, offset in table.items()} == {q: 0 for q in range(QUEUES)}
