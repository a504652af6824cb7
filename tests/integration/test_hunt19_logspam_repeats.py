"""What the log says when the same failure happens again and again: a push consumer whose handler raises on
every message, a push consumer whose broker is gone, a lite pull consumer assigned a queue it cannot look
up, a slave whose master is down (its HA connection and its copy of the master's tables).  Each run of
failures gives one warning or error line (the first; then every 1000th), the repeats are debug lines, so a
client app's log or ``rocketstore serve``'s does not fill with a line (and a traceback) per try.  Real name
server, broker, store and clients; counts of records over a bounded number of failures, deadlines only."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster, eventually, run, run_within

from rocketstore.broker.ha import HAClient
from rocketstore.broker.slave_sync import SlaveSync
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.message_store import MessageStore

FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.05,
                        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def records(caplog: pytest.LogCaptureFixture, logger: str, text: str,
            level: int | None = None) -> list[logging.LogRecord]:
    """*logger*'s records saying *text*, at *level* (None: at any level)."""
    return [r for r in caplog.records if r.name == logger and text in r.getMessage()
            and (level is None or r.levelno == level)]


def refused_addr() -> str:
    """An address nothing listens on: every connect to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_a_handler_raising_on_every_message_logs_one_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sent = 12
    calls: list[int] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        calls.append(len(messages))
        raise ValueError("the handler's own bug")

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt19Raising", queues=1)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt19-raising-producer") as producer:
                for i in range(sent):
                    await producer.send("Hunt19Raising", b"m%d" % i)
            with caplog.at_level(logging.DEBUG, logger="rocketstore.client.consume"):
                async with PushConsumer(cluster.namesrv_addr, "hunt19-raising-group", {"Hunt19Raising": "*"},
                                        handle, **FAST):
                    await eventually(lambda: len(calls) >= sent, 30, "every message handed to the handler")

        run_within(go, 60)
    said = "handler of group hunt19-raising-group failed"
    errors = records(caplog, "rocketstore.client.consume", said, logging.ERROR)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert errors[0].exc_info is not None and "ValueError" in errors[0].getMessage()
    repeats = records(caplog, "rocketstore.client.consume", said, logging.DEBUG)
    assert len(repeats) == len(calls) - 1
    assert all(r.exc_info is None and "ValueError: the handler's own bug" in r.getMessage() for r in repeats)


def test_pulls_of_a_gone_broker_log_one_warning_per_queue(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    consumed: list[bytes] = []
    topic = "topic='Hunt19Gone'"  # as a MessageQueue of the topic shows in the log

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        consumed.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    def failed(queue_id: int) -> int:
        return sum(f"queue_id={queue_id}" in r.getMessage()
                   for r in records(caplog, "rocketstore.client.pull_loop", topic))

    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Hunt19Gone", queues=2)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt19-gone-producer") as producer:
                for i in range(4):
                    await producer.send("Hunt19Gone", b"m%d" % i)
            async with PushConsumer(cluster.namesrv_addr, "hunt19-gone-group", {"Hunt19Gone": "*"}, handle,
                                    **FAST):
                await eventually(lambda: len(consumed) >= 4, 30, "the messages consumed")
                with caplog.at_level(logging.DEBUG, logger="rocketstore.client.pull_loop"):
                    closing = asyncio.run_coroutine_threadsafe(cluster.broker.close(), cluster.loop)
                    await asyncio.wrap_future(closing)
                    await eventually(lambda: failed(0) >= 20 and failed(1) >= 20, 30,
                                     "20 failed pulls of each of the topic's two queues")

        run_within(go, 90)
    warned = [r.getMessage() for r in records(caplog, "rocketstore.client.pull_loop", topic, logging.WARNING)]
    assert len([m for m in warned if "queue_id=0" in m]) == 1, warned
    assert len([m for m in warned if "queue_id=1" in m]) == 1, warned
    assert all("1 in a row" in m for m in warned), warned
    assert not [r for r in caplog.records if r.name == "rocketstore.client.pull_loop" and r.exc_info]


def test_a_slave_whose_master_is_down_logs_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    addr = refused_addr()
    store = MessageStore.open(None, StoreConfig(store_path_root_dir=str(tmp_path / "slave"),
                                                broker_role=BrokerRole.SLAVE, **SMALL_STORE))
    try:
        async def go() -> None:
            client = HAClient(store, lambda: addr, reconnect_s=0.01)
            with caplog.at_level(logging.DEBUG, logger="rocketstore.broker.ha"):
                client.start()
                try:
                    await eventually(lambda: len(records(caplog, "rocketstore.broker.ha", "replication from"))
                                     >= 20, 30, "20 refused connects")
                finally:
                    await client.close()

        run(go())
    finally:
        store.close()
    warned = records(caplog, "rocketstore.broker.ha", "replication from", logging.WARNING)
    assert len(warned) == 1, [r.getMessage() for r in warned]
    assert addr in warned[0].getMessage() and warned[0].exc_info is None


def test_the_slave_sync_of_an_unreachable_master_logs_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The slave's copy of the master's topics and offsets (every 10 s), the master registered but not
    reachable from the slave: one warning, then debug lines."""
    addr = refused_addr()
    with LocalCluster(tmp_path / "store") as cluster:
        sync = SlaveSync(cluster.broker, lambda: addr, period_s=0.01, first_delay_s=0)
        with caplog.at_level(logging.DEBUG, logger="rocketstore.broker.slave_sync"):
            cluster.call(sync.start)
            try:
                cluster.wait_until(lambda: len(records(caplog, "rocketstore.broker.slave_sync", "slave sync"))
                                   >= 20, 30, "20 failed rounds")
            finally:
                cluster.run(sync.close())
    warned = records(caplog, "rocketstore.broker.slave_sync", "slave sync", logging.WARNING)
    assert len(warned) == 1, [r.getMessage() for r in warned]
    assert addr in warned[0].getMessage() and warned[0].exc_info is None


def test_a_lite_pull_consumer_assigned_an_unreachable_queue_logs_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Where to pull an assigned queue from cannot be looked up (its topic has no route: no broker serves
    it), tried again every ``pull_delay_on_error_s``: one warning, then debug lines."""
    said = "cannot compute where to pull MessageQueue(topic='Hunt19Nowhere'"
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> None:
            consumer = LitePullConsumer(cluster.namesrv_addr, "hunt19-nowhere-group", pull_delay_on_error_s=0.01)
            consumer.assign([MessageQueue("Hunt19Nowhere", "broker-a", 0)])
            with caplog.at_level(logging.DEBUG, logger="rocketstore.client.lite_pull_consumer"):
                async with consumer:
                    await eventually(lambda: len(records(caplog, "rocketstore.client.lite_pull_consumer", said))
                                     >= 20, 30, "20 failed look-ups")

        run_within(go, 60)
    warned = records(caplog, "rocketstore.client.lite_pull_consumer", said, logging.WARNING)
    assert len(warned) == 1, [r.getMessage() for r in warned]
    assert warned[0].exc_info is None
