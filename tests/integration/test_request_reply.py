"""Request/reply end to end: a RequestProducer sends requests through a real broker to a PushConsumer whose
handler answers with Producer.send_reply; the broker pushes each reply back to the requester
(PUSH_REPLY_MESSAGE_TO_CLIENT) and stores it in <cluster>_REPLY_TOPIC.  Then the broker's answers to
replies that cannot be delivered, v1 request names (SEND_REPLY_MESSAGE, 324), storeReplyMessageEnable=false
and a reply over maxMessageSize, each from raw remoting requests.  Deadlines only, no durations asserted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from local_cluster import LocalCluster, run_within, stored_messages, wait_stored
from serve_process import cli, env
from test_python_push_consumer import FAST, create_topic

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
    ReplyMessage,
    ReplyTimeoutError,
    RequestProducer,
)
from rocketstore.message.properties import encode_properties
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.send_headers import SendMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool

T = TypeVar("T")

TEST_TIMEOUT_S = 90.0
WAIT_S = 30.0
CLUSTER = "DefaultCluster"
REPLY_TOPIC = f"{CLUSTER}_REPLY_TOPIC"


def arun(fn: Callable[[], Awaitable[T]]) -> T:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as c:
        yield c


def _answering_consumer(cluster: LocalCluster, topic: str, replier: Producer, answer: Callable[[bytes], bytes],
                        seen: list[ConsumedMessage]) -> PushConsumer:
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        for m in messages:
            seen.append(m)
            await replier.send_reply(m, answer(m.body), tags="answer")
        return ConsumeStatus.CONSUME_SUCCESS

    return PushConsumer(cluster.namesrv_addr, "rpc-server", {topic: "*"}, handle,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST)


def test_a_request_gets_the_reply_its_consumer_sends(cluster: LocalCluster) -> None:
    topic = "RpcTopic"
    seen: list[ConsumedMessage] = []

    async def go() -> tuple[ReplyMessage, str]:
        await create_topic(cluster, topic)
        async with Producer(cluster.namesrv_addr, "rpc-replier") as replier, \
                _answering_consumer(cluster, topic, replier, lambda b: b"re: " + b, seen), \
                RequestProducer(cluster.namesrv_addr, "rpc-client") as requester:
            reply = await requester.request(topic, b"ping", timeout_s=WAIT_S, keys="k-1")
            return reply, requester.client_id

    reply, client_id = arun(go)
    assert reply.body == b"re: ping"
    assert reply.topic == REPLY_TOPIC
    assert reply.tags == "answer"
    assert reply.properties["MSG_TYPE"] == "reply"
    assert reply.properties["REPLY_TO_CLIENT"] == client_id
    assert reply.properties["TTL"] == str(int(WAIT_S * 1000))
    assert int(reply.properties["PUSH_REPLY_TIME"]) <= int(reply.properties["ARRIVE_TIME"])
    assert reply.born_host.startswith("127.0.0.1:") and reply.store_host == cluster.broker_addr
    # the request as the consumer got it: the broker added CLUSTER, the requester the three reply properties
    request = seen[0]
    assert request.properties["CLUSTER"] == CLUSTER
    assert request.properties["CORRELATION_ID"] == reply.correlation_id
    assert request.keys == "k-1"
    # storeReplyMessageEnable (the default): the reply is in the cluster's reply topic too
    stored = wait_stored(cluster, REPLY_TOPIC, 1, "the stored reply", queues=1)
    assert stored[0].body == b"re: ping"
    assert stored[0].properties["CORRELATION_ID"] == reply.correlation_id
    assert "CLUSTER" not in stored[0].properties, "a reply is stored with its properties as sent"


def test_concurrent_requests_each_get_their_own_reply(cluster: LocalCluster) -> None:
    topic = "RpcManyTopic"
    seen: list[ConsumedMessage] = []

    async def go() -> list[ReplyMessage]:
        await create_topic(cluster, topic)
        async with Producer(cluster.namesrv_addr, "rpc-replier") as replier, \
                _answering_consumer(cluster, topic, replier, lambda b: b[::-1], seen), \
                RequestProducer(cluster.namesrv_addr, "rpc-client") as requester:
            return await asyncio.gather(*(requester.request(topic, f"req-{i:03d}".encode(), timeout_s=WAIT_S)
                                          for i in range(40)))

    replies = arun(go)
    assert [r.body for r in replies] == [f"req-{i:03d}".encode()[::-1] for i in range(40)]
    assert len({r.correlation_id for r in replies}) == 40


def test_a_request_nobody_answers_times_out_and_a_late_reply_is_refused(cluster: LocalCluster) -> None:
    topic = "RpcSilentTopic"

    async def go() -> tuple[ReplyTimeoutError, RemotingCommand]:
        await create_topic(cluster, topic)
        async with RequestProducer(cluster.namesrv_addr, "rpc-client") as requester:
            with pytest.raises(ReplyTimeoutError) as caught:
                await requester.request(topic, b"anyone?", timeout_s=0.5)
            client_id = requester.client_id
        # the requester is gone: a reply to it now cannot be pushed
        request = stored_messages(cluster, topic, 4)[0]
        assert request.properties["REPLY_TO_CLIENT"] == client_id
        async with Producer(cluster.namesrv_addr, "rpc-replier") as replier:
            pool = ConnectionPool()
            try:
                answer = await pool.request(cluster.broker_addr, _raw_reply(replier, request.properties, b"late"), 10)
            finally:
                await pool.close()
        return caught.value, answer

    error, answer = arun(go)
    assert "wait reply message timeout" in str(error) and error.topic == topic
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark is not None and "not found" in answer.remark
    assert answer.ext_fields["msgId"] != "0", "stored even though nobody took it"
    wait_stored(cluster, REPLY_TOPIC, 1, "the undeliverable reply, stored", queues=1)


def _raw_reply(replier: Producer, request_properties: dict[str, str], body: bytes, *, v1: bool = False,
               properties: dict[str, str] | None = None) -> RemotingCommand:
    """A SEND_REPLY_MESSAGE(_V2) request as a Java client builds it for MessageUtil.createReplyMessage."""
    props = properties if properties is not None else {
        "MSG_TYPE": "reply", "CORRELATION_ID": request_properties["CORRELATION_ID"],
        "REPLY_TO_CLIENT": request_properties["REPLY_TO_CLIENT"], "TTL": request_properties["TTL"]}
    header = SendMessageRequestHeader(
        producer_group=replier.group, topic=REPLY_TOPIC, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
        properties=encode_properties(props), reconsume_times=0, unit_mode=False, batch=False)
    if v1:
        return RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE, header.to_ext_fields(), body)
    return RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE_V2, header.to_ext_fields_v2(), body)


def test_v1_reply_names_reach_the_requester_and_storing_can_be_switched_off(tmp_path: Path) -> None:
    """SEND_REPLY_MESSAGE (324) with the v1 header names; with storeReplyMessageEnable=false the reply is
    pushed but not stored (msgId "0", queueOffset 0 in the answer)."""
    topic = "RpcV1Topic"
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER, store_reply_message_enable=False) as cluster:
        async def go() -> tuple[ReplyMessage, RemotingCommand]:
            await create_topic(cluster, topic)
            async with RequestProducer(cluster.namesrv_addr, "rpc-client") as requester, \
                    Producer(cluster.namesrv_addr, "rpc-replier") as replier:
                waiting = asyncio.ensure_future(requester.request(topic, b"v1?", timeout_s=WAIT_S))

                async def request_stored() -> dict[str, str]:
                    while not (found := stored_messages(cluster, topic, 4)):
                        await asyncio.sleep(0.05)
                    return found[0].properties

                props = await asyncio.wait_for(request_stored(), WAIT_S)
                pool = ConnectionPool()
                try:
                    answer = await pool.request(cluster.broker_addr, _raw_reply(replier, props, b"v1!", v1=True), 10)
                finally:
                    await pool.close()
                return await waiting, answer

        reply, answer = arun(go)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert (answer.ext_fields["msgId"], answer.ext_fields["queueOffset"]) == ("0", "0")
        assert reply.body == b"v1!"
        cluster.wait_dispatched()
        assert stored_messages(cluster, REPLY_TOPIC, 1) == [], "storeReplyMessageEnable=false stores nothing"


def test_bad_replies_get_the_brokers_errors(cluster: LocalCluster) -> None:
    async def go() -> list[RemotingCommand]:
        async with Producer(cluster.namesrv_addr, "rpc-replier") as replier:
            pool = ConnectionPool()
            try:
                no_target = await pool.request(cluster.broker_addr, _raw_reply(
                    replier, {}, b"to nobody", properties={"MSG_TYPE": "reply", "CORRELATION_ID": "x"}), 10)
                unknown = await pool.request(cluster.broker_addr, _raw_reply(
                    replier, {"CORRELATION_ID": "y", "REPLY_TO_CLIENT": "10.0.0.9@nobody", "TTL": "3000"},
                    b"to a stranger"), 10)
                huge = await pool.request(cluster.broker_addr, _raw_reply(
                    replier, {"CORRELATION_ID": "z", "REPLY_TO_CLIENT": "10.0.0.9@nobody", "TTL": "3000"},
                    b"x" * (cluster.broker.store.config.max_message_size + 1)), 10)
            finally:
                await pool.close()
            return [no_target, unknown, huge]

    no_target, unknown, huge = arun(go)
    assert no_target.code == ResponseCode.SYSTEM_ERROR
    assert no_target.remark == "reply message properties[REPLY_TO_CLIENT] is null"
    assert unknown.code == ResponseCode.SYSTEM_ERROR
    assert unknown.remark == "push reply message fail, channel of <10.0.0.9@nobody> not found."
    assert huge.code == ResponseCode.MESSAGE_ILLEGAL
    stored = wait_stored(cluster, REPLY_TOPIC, 2, "the two undeliverable replies (not the huge one)", queues=1)
    assert sorted(m.body for m in stored) == [b"to a stranger", b"to nobody"]


def test_send_reply_refuses_a_message_that_is_not_a_request(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "rpc-replier") as replier:
            # (one with CLUSTER but no REPLY_TO_CLIENT is sent, as 4.9.3's: test_hunt17_producer2_reply.py)
            with pytest.raises(ValueError, match="CLUSTER"):
                await replier.send_reply(SimpleNamespace(properties={"REPLY_TO_CLIENT": "a@b"}), b"?")

    arun(go)


def test_cli_request_and_consume_reply_make_a_round_trip(cluster: LocalCluster) -> None:
    """``rocketstore consume --reply`` answering in one process, ``rocketstore request`` in another."""
    topic = "RpcCliTopic"
    arun(lambda: create_topic(cluster, topic))
    ns = ("--namesrv", cluster.namesrv_addr)
    server = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", "consume", topic, "-g", "cli-rpc",
                               "--max", "1", "--timeout", "60", "--reply", "pong: {body}", *ns],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        out = cli("request", topic, "ping", "--timeout", "60", "--json", *ns)
        assert out.returncode == 0, out.stderr[-2000:]
        reply = json.loads(out.stdout)
        assert reply["body"] == "pong: ping"
        assert reply["topic"] == REPLY_TOPIC and reply["properties"]["MSG_TYPE"] == "reply"
        stdout, stderr = server.communicate(timeout=60)
        assert server.returncode == 0, stderr[-2000:]
        assert "ping" in stdout
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    silent = cli("request", topic, "anyone?", "--timeout", "0.5", *ns)
    assert silent.returncode == 1 and "wait reply message timeout" in silent.stderr
