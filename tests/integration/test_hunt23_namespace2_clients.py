"""``namespace`` on the transactional and the requesting producers (4.9.3's ClientConfig.namespace on
TransactionMQProducer and DefaultMQProducer.request) against a real name server + broker: a namespaced
half message lands in ``NS%T`` under the group ``NS%G``, and ``execute`` and the broker's check see topic
``T``; a namespaced request goes to ``NS%T`` and its reply reaches the requester."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, run_within
from test_python_push_consumer import FAST, create_topic
from test_python_transactions import FAST_CHECKS, eventually, records_of

from rocketstore.client import (
    BlockingRequestProducer,
    BlockingTransactionProducer,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
    RequestProducer,
)
from rocketstore.client.transaction_producer import (
    LocalTransactionState,
    TransactionMessage,
    TransactionProducer,
)
from rocketstore.message.properties import PropertyName

TEST_TIMEOUT_S = 90.0
NS = "NsH23b"


def arun(fn: Callable[[], Awaitable[Any]]) -> Any:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


def test_a_namespaced_transaction_lands_in_the_namespace_and_its_check_sees_the_topic(tmp_path: Path) -> None:
    topic, group = "H23NsTxTopic", "h23-ns-tx"
    executed: list[TransactionMessage] = []
    checked: list[TransactionMessage] = []

    def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        executed.append(message)
        return LocalTransactionState.UNKNOW

    def check(message: TransactionMessage) -> LocalTransactionState:
        checked.append(message)
        return LocalTransactionState.COMMIT_MESSAGE

    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> Any:
            async with TransactionProducer(cluster.namesrv_addr, group, check, namespace=NS) as producer:
                result = await producer.send_in_transaction(topic, b"tx", execute)
                [final] = await eventually(lambda: records_of(cluster, f"{NS}%{topic}", result.msg_id),
                                           "the message committed by the check")
            return result, final

        result, final = arun(go)
    assert result.message_queue.topic == topic
    assert [m.topic for m in executed] == [topic]
    assert checked and {m.topic for m in checked} == {topic}, "the check listener sees the topic as sent"
    assert checked[0].properties[PropertyName.PGROUP] == f"{NS}%{group}"
    assert final.body == b"tx" and final.topic == f"{NS}%{topic}"


def test_a_blocking_namespaced_transaction_commits_into_the_namespace(tmp_path: Path) -> None:
    topic, group = "H23NsTxBlocking", "h23-ns-tx-blocking"
    with LocalCluster(tmp_path / "store") as cluster:
        with BlockingTransactionProducer(cluster.namesrv_addr, group, lambda m: LocalTransactionState.UNKNOW,
                                         namespace=NS) as producer:
            result = producer.send_in_transaction(topic, b"b",
                                                  lambda m, a: LocalTransactionState.COMMIT_MESSAGE)
        assert result.message_queue.topic == topic
        assert result.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE

        async def stored() -> Any:
            return await eventually(lambda: records_of(cluster, f"{NS}%{topic}", result.msg_id),
                                    "the committed message in the namespace")
        [final] = arun(stored)
        assert final.body == b"b"


def _answering(cluster: LocalCluster, topic: str, replier: Producer, seen: list[ConsumedMessage],
               **options: Any) -> PushConsumer:
    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        for m in messages:
            seen.append(m)
            await replier.send_reply(m, b"re: " + m.body)
        return ConsumeStatus.CONSUME_SUCCESS

    return PushConsumer(cluster.namesrv_addr, "h23-ns-rpc-server", {topic: "*"}, handle,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST, **options)


def test_a_namespaced_request_goes_to_the_namespace_and_gets_its_reply(tmp_path: Path) -> None:
    topic = "H23NsRpc"
    seen: list[ConsumedMessage] = []
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> Any:
            await create_topic(cluster, f"{NS}%{topic}")
            async with Producer(cluster.namesrv_addr, "h23-ns-replier", namespace=NS) as replier, \
                    _answering(cluster, topic, replier, seen, namespace=NS), \
                    RequestProducer(cluster.namesrv_addr, "h23-ns-rpc", namespace=NS) as requester:
                reply = await requester.request(topic, b"ping", timeout_s=30)
                ordered = await requester.request_orderly(topic, b"pong", "key", timeout_s=30)
            return reply, ordered

        reply, ordered = arun(go)
    assert (reply.body, ordered.body) == (b"re: ping", b"re: pong")
    assert {m.topic for m in seen} == {topic}, "the namespaced consumer of T got the requests"


def test_a_blocking_namespaced_request_reaches_a_plain_consumer_of_the_wrapped_topic(tmp_path: Path) -> None:
    topic = "H23NsRpcBlocking"
    seen: list[ConsumedMessage] = []
    with LocalCluster(tmp_path / "store") as cluster:
        async def serve() -> Any:
            await create_topic(cluster, f"{NS}%{topic}")

        arun(serve)
        with BlockingRequestProducer(cluster.namesrv_addr, "h23-ns-rpc-b", namespace=NS) as requester:
            async def answer() -> Any:
                async with Producer(cluster.namesrv_addr, "h23-ns-replier-b") as replier, \
                        _answering(cluster, f"{NS}%{topic}", replier, seen):
                    await eventually(lambda: _now(replies), "the reply")

            replies: list[Any] = []
            t = threading.Thread(target=lambda: replies.append(requester.request(topic, b"hi", timeout_s=30)))
            t.start()
            arun(answer)
            t.join(30)
    assert [r.body for r in replies] == [b"re: hi"]
    assert {m.topic for m in seen} == {f"{NS}%{topic}"}


async def _now(value: list[Any]) -> list[Any]:
    return value
