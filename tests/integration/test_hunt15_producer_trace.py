"""The producer side of message trace against 4.9.3's SendMessageTraceHookImpl:

* the hook wraps each sendKernelImpl call, so a send that failed on one broker and was retried on another
  is traced with the timestamp and costTime of the attempt that answered, not of the whole send;
* DefaultMQProducer.request goes through the same send path, so a RequestProducer with enable_trace records
  a Pub for each request message (Normal_Msg, its keys and tags, the requester's group).

Real name server, broker and clients; the failing broker of the retry test is a stand-in registered with the
real name server (a broker that answers SYSTEM_ERROR, a retriable code, after a while: nothing in a real
broker fails that way on demand)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_python_push_consumer import FAST

from rocketstore.broker.registration import Registrar
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
    RequestProducer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError
from rocketstore.client.trace import MessageType, TraceContext, TraceType
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection, run

TOPIC = "Hunt15TraceRetryTopic"
WAIT_S = 30.0


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 1)
        yield c


async def pub_of(namesrv: str, msg_id: str) -> TraceContext:
    """The Pub record of *msg_id* in RMQ_SYS_TRACE_TOPIC, once the trace producer has sent it."""
    deadline = time.monotonic() + WAIT_S
    async with AdminClient(namesrv) as admin:
        while True:
            try:
                trace = await admin.query_message_trace(msg_id)
                pubs = [v.context for v in trace.views if v.context.trace_type == TraceType.Pub]
                if pubs:
                    [pub] = pubs
                    return pub
            except NoRouteError:  # the trace topic is not there yet
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no Pub of {msg_id} within {WAIT_S} s")
            await asyncio.sleep(0.1)


class SlowFailingBroker:
    """Answers heartbeats, and every send SYSTEM_ERROR 0.3 s after it came; notes when it answered."""

    def __init__(self) -> None:
        self.failed_at_ms: list[int] = []
        self.server = RemotingServer(self._serve)

    async def _serve(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.SEND_MESSAGE_V2:
            await asyncio.sleep(0.3)
            self.failed_at_ms.append(int(time.time() * 1000))
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="store went away")
        return request.make_response(ResponseCode.SUCCESS)


def test_a_retried_send_is_traced_with_the_time_of_the_attempt_that_answered(cluster: LocalCluster) -> None:
    async def go() -> list[tuple[int, int, int, TraceContext]]:
        slow = SlowFailingBroker()
        await slow.server.start("127.0.0.1", 0)
        registrar = Registrar([cluster.namesrv_addr], cluster_name="DefaultCluster", broker_name="broker-slow",
                              broker_id=0, broker_addr=slow.server.address, ha_server_addr=slow.server.address,
                              body=lambda: RegisterBrokerBody({TOPIC: TopicConfig(TOPIC, 1, 1)}, DataVersion(1, 1)))
        sends = []
        try:
            await registrar.register_all()
            async with Producer(cluster.namesrv_addr, "hunt15-trace-retry", enable_trace=True,
                                timeout_s=10.0) as producer:
                # round robin over two brokers, the retry elsewhere: one of two sends starts on the slow one
                for i in range(2):
                    failures = len(slow.failed_at_ms)
                    result = await producer.send(TOPIC, f"m{i}".encode())
                    returned_ms = int(time.time() * 1000)
                    assert result.message_queue.broker_name == cluster.broker_name
                    if len(slow.failed_at_ms) > failures:
                        sends.append((slow.failed_at_ms[-1], returned_ms, len(slow.failed_at_ms) - failures,
                                      result.msg_id))
            return [(failed, returned, count, await pub_of(cluster.namesrv_addr, msg_id))
                    for failed, returned, count, msg_id in sends]
        finally:
            await registrar.pool.close()
            await slow.server.close()

    retried = run(asyncio.wait_for(go(), 90))
    assert retried, "no send started on the slow broker"
    for failed_at_ms, returned_ms, failures, pub in retried:
        assert failures == 1
        # timestamp: the start of the attempt that answered, after the failed one ended; costTime: that
        # attempt alone (the failed attempt's 0.3 s not in it)
        assert pub.timestamp_ms is not None and pub.timestamp_ms >= failed_at_ms
        assert pub.cost_time_ms <= returned_ms - failed_at_ms
        assert pub.success


def test_a_traced_request_producer_records_a_pub_for_each_request(cluster: LocalCluster) -> None:
    topic = "Hunt15TracedRpcTopic"
    cluster.create_topic(topic, 1)
    seen: list[ConsumedMessage] = []

    async def go() -> tuple[bytes, TraceContext]:
        async with Producer(cluster.namesrv_addr, "hunt15-rpc-replier") as replier:
            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                for m in messages:
                    seen.append(m)
                    await replier.send_reply(m, b"re: " + m.body)
                return ConsumeStatus.CONSUME_SUCCESS

            async with PushConsumer(cluster.namesrv_addr, "hunt15-rpc-server", {topic: "*"}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST), \
                    RequestProducer(cluster.namesrv_addr, "hunt15-rpc-client", enable_trace=True) as requester:
                reply = await requester.request(topic, b"ping", timeout_s=WAIT_S, tags="Ask", keys="rpc-k1")
        return reply.body, await pub_of(cluster.namesrv_addr, seen[0].msg_id)

    body, pub = run(asyncio.wait_for(go(), 90))
    assert body == b"re: ping"
    [bean] = pub.beans
    assert (pub.group, pub.success) == ("hunt15-rpc-client", True)
    assert (bean.topic, bean.tags, bean.keys, bean.msg_type) == (topic, "Ask", "rpc-k1", MessageType.Normal_Msg)
    assert bean.store_host == cluster.broker_addr and bean.body_length == len(b"ping")
