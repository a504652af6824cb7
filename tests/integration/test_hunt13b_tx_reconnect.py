"""Producers the broker calls back, across a broker killed (kill -9) and restarted on the same ports: the
requesting producer's replies and the transactional producer's checks must reach it again at once, not
after its next periodic heartbeat.

The broker drops a producer's channel when its connection closes, and a restarted broker knows nobody; the
producers here heartbeat only every 600 s, so what reaches them must come from the heartbeat sent again
when they find their heartbeated connection closed.  ``rocketstore serve`` runs in a subprocess; deadlines
only, no durations asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from local_cluster import run_within
from serve_process import ServeProcess, free_port, write_broker_conf
from test_python_push_consumer import FAST

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Producer,
    PushConsumer,
    RequestProducer,
    TransactionMessage,
    TransactionProducer,
)

T = TypeVar("T")

TEST_TIMEOUT_S = 90.0
WAIT_S = 20.0
#: no periodic heartbeat (nor route re-read, which may heartbeat a master new in a route) within a test
RARE_HEARTBEATS_S = 600.0


def arun(fn: Callable[[], Awaitable[T]]) -> T:
    return run_within(fn, TEST_TIMEOUT_S)  # type: ignore[arg-type]


class RestartableServe:
    """A ``rocketstore serve`` whose broker can be killed and started again on the same ports and store."""

    def __init__(self, tmp_path: Path, **conf: object) -> None:
        self.store = tmp_path / "store"
        self.conf = write_broker_conf(tmp_path / "broker.conf", **conf)
        self.ports = (free_port(), free_port())
        self.serve = self._start()
        self.namesrv_addr = self.serve.namesrv_addr

    def _start(self) -> ServeProcess:
        return ServeProcess(self.store, self.conf, namesrv_port=self.ports[0], broker_port=self.ports[1]).start()

    async def kill_and_restart(self) -> None:
        def again() -> None:
            self.serve.kill()
            self.serve = self._start()

        await asyncio.get_running_loop().run_in_executor(None, again)

    def close(self) -> None:
        self.serve.kill()


def test_a_request_after_the_broker_restarted_gets_its_reply(tmp_path: Path) -> None:
    serve = RestartableServe(tmp_path)
    topic = "RpcAfterRestart"

    async def go() -> list[bytes]:
        replier = Producer(serve.namesrv_addr, "rpc-replier")
        await replier.send(topic, b"creates the topic")

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            for m in messages:
                if m.properties.get("CORRELATION_ID"):
                    await replier.send_reply(m, b"re: " + m.body)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(serve.namesrv_addr, "rpc-server", {topic: "*"}, handle,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **FAST)
        requester = RequestProducer(serve.namesrv_addr, "rpc-client", heartbeat_interval_s=RARE_HEARTBEATS_S,
                                    route_refresh_interval_s=RARE_HEARTBEATS_S)
        try:
            await consumer.start()
            bodies = [(await requester.request(topic, b"before", timeout_s=WAIT_S)).body]
            await serve.kill_and_restart()
            for i in range(3):
                bodies.append((await requester.request(topic, f"after {i}".encode(), timeout_s=WAIT_S)).body)
            return bodies
        finally:
            await requester.close()
            await consumer.shutdown()
            await replier.close()

    try:
        bodies = arun(go)
    finally:
        serve.close()
    assert bodies == [b"re: before", b"re: after 0", b"re: after 1", b"re: after 2"]


def test_a_transaction_sent_after_the_broker_restarted_is_checked_back(tmp_path: Path) -> None:
    serve = RestartableServe(tmp_path, transactionCheckInterval=200, transactionTimeOut=300)
    asked: list[str | None] = []

    def check(message: TransactionMessage) -> LocalTransactionState:
        asked.append(message.transaction_id)
        return LocalTransactionState.ROLLBACK_MESSAGE

    def unknown(message: TransactionMessage, arg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW

    async def go() -> tuple[str, str]:
        async with Producer(serve.namesrv_addr, "tx-warm") as warm:
            await warm.send("TxAfterRestart", b"creates the topic")
        async with TransactionProducer(serve.namesrv_addr, "tx-restart", check,
                                       heartbeat_interval_s=RARE_HEARTBEATS_S,
                                       route_refresh_interval_s=RARE_HEARTBEATS_S) as producer:
            first = await producer.send_in_transaction("TxAfterRestart", b"before", unknown)
            await _until(lambda: first.msg_id in asked, "the check of the transaction sent before the restart")
            await serve.kill_and_restart()
            second = await producer.send_in_transaction("TxAfterRestart", b"after", unknown)
            await _until(lambda: second.msg_id in asked, "the check of the transaction sent after the restart")
            return first.msg_id, second.msg_id

    try:
        first_id, second_id = arun(go)
    finally:
        serve.close()
    assert first_id in asked and second_id in asked


async def _until(condition: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up after {WAIT_S} s waiting for {what}")
        await asyncio.sleep(0.05)

