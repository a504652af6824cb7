"""A push consumer's pull, and an admin's query by key, that times out leaves its connection open, as
4.9.3's (its push consumer pulls, and MQAdminImpl.queryMessage asks, with invokeAsync, which closes no
channel on a time-out; only invokeSync does, clientCloseSocketIfTimeout): the other queues' long polls, the
offsets and the heartbeats on that connection go on.  Before, the time-out closed it, failing every request
waiting on it.  A lite pull consumer's pull (invokeSync in 4.9.3) still closes it.  A fault proxy holds
what the broker sends (no FIN, no RST) past one call's time-out."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from test_hunt31_netfault_silent_peer_sync_calls import TOPIC, broker_behind_proxy, until

from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    Producer,
    PushConsumer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.push_settings import PushConsumerSettings
from rocketstore.errors import RequestTimeoutError
from rocketstore.remoting.transport import run

#: the bound of every call meant to be answered: far past what a loaded 2-core box takes
GENEROUS_S = 15.0
#: the other requests' bounds (timeout_s, mq_client_api_timeout_s) well past the stall's (about one pull's
#: 1 s): none of them times out
FAST = {"heartbeat_interval_s": 60.0, "rebalance_interval_s": 0.5, "persist_interval_s": 60.0,
        "route_refresh_interval_s": 60.0, "long_poll_ms": 500, "timeout_s": GENEROUS_S,
        "mq_client_api_timeout_s": GENEROUS_S, "pull_delay_on_error_s": 0.1,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


def generous_producer(namesrv_addr: str) -> Producer:
    return Producer(namesrv_addr, "netfault_pg", timeout_s=GENEROUS_S, mq_client_api_timeout_s=GENEROUS_S)


def failed_pulls(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "failed: no response from" in r.getMessage()]


def test_a_push_consumer_pull_timing_out_leaves_its_connection_open(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.client.pull_loop")
    # a pull's bound: 1 s (at least 30 s, and long_poll_ms plus timeout_s)
    monkeypatch.setattr(PushConsumerSettings, "consumer_timeout_when_suspend_s", property(lambda _: 1.0))

    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            got: list[bytes] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.body for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            producer = generous_producer(namesrv.address)
            await producer.start()
            try:
                async with PushConsumer(namesrv.address, "netfault_cg", {TOPIC: "*"}, handle, **FAST):
                    await producer.send(TOPIC, b"one")
                    await until(lambda: got == [b"one"], "the first message")
                    opened = proxy.accepted
                    proxy.stall_down()
                    await until(lambda: bool(failed_pulls(caplog)), "a pull timed out")
                    proxy.resume_down()
                    await producer.send(TOPIC, b"two")
                    await until(lambda: got == [b"one", b"two"], "the message after the time-out")
                    assert proxy.accepted == opened  # the connection of the timed-out pull went on
            finally:
                await producer.close()

    run(scenario())


def test_a_lite_pull_timing_out_closes_its_connection(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            producer = generous_producer(namesrv.address)
            await producer.start()
            try:
                # (its pulls' bound, 1 s, the one meant to time out; the other calls' generous)
                consumer = LitePullConsumer(namesrv.address, "netfault_lite", long_poll_ms=500,
                                            consumer_timeout_when_suspend_s=1.0, pull_delay_on_error_s=0.1,
                                            timeout_s=GENEROUS_S, mq_client_api_timeout_s=GENEROUS_S,
                                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
                consumer.subscribe(TOPIC, "*")
                await consumer.start()
                try:
                    await producer.send(TOPIC, b"one")
                    assert [m.body for m in await consumer.poll(timeout_s=10)] == [b"one"]
                    opened = proxy.accepted
                    proxy.stall_down()
                    await until(lambda: proxy.accepted > opened, "a new connection after the time-out")
                    proxy.resume_down()
                    await producer.send(TOPIC, b"two")
                    assert [m.body for m in await consumer.poll(timeout_s=10)] == [b"two"]
                finally:
                    await consumer.close()
            finally:
                await producer.close()

    run(scenario())


def test_a_query_by_key_timing_out_leaves_its_connection_open(tmp_path: Path) -> None:
    # 4.9.3's MQAdminImpl.queryMessage asks each broker with invokeAsync too
    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            producer = generous_producer(namesrv.address)
            await producer.start()
            try:
                await producer.send(TOPIC, b"one", keys="k1")
                async with AdminClient(namesrv.address, timeout_s=GENEROUS_S) as admin:
                    await until_found(admin)
                    opened = proxy.accepted
                    proxy.stall_down()
                    admin.timeout_s = 1.0  # (read by each query) short for the stalled one only
                    with pytest.raises(RequestTimeoutError):
                        await admin.query_by_key(TOPIC, "k1")
                    admin.timeout_s = GENEROUS_S
                    proxy.resume_down()
                    assert [m.body for m in await admin.query_by_key(TOPIC, "k1")] == [b"one"]
                    assert proxy.accepted == opened
            finally:
                await producer.close()

    run(scenario())


async def until_found(admin: AdminClient) -> None:
    for _ in range(200):  # the index is written by the dispatch, after the send's answer
        if await admin.query_by_key(TOPIC, "k1"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the key was never found")


def test_a_push_consumer_on_a_silent_connection_recovers_through_its_heartbeat(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its pulls time out and leave the connection open; its sync calls (a heartbeat, a rebalance's consumer
    # list: invokeSync in 4.9.3 too) time out on it and close it, and the pulls go on on a new one
    monkeypatch.setattr(PushConsumerSettings, "consumer_timeout_when_suspend_s", property(lambda _: 1.0))

    async def scenario() -> None:
        async with broker_behind_proxy(tmp_path / "store") as (namesrv, proxy):
            got: list[bytes] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.body for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            producer = generous_producer(namesrv.address)
            await producer.start()
            try:
                # the heartbeats' bound short enough for the silent connection's to time out soon (on the
                # new connection, one timing out on a loaded box only closes it once more: recovered the same)
                settings = {**FAST, "heartbeat_interval_s": 0.5, "mq_client_api_timeout_s": 2.0}
                async with PushConsumer(namesrv.address, "netfault_cg", {TOPIC: "*"}, handle, **settings):
                    await producer.send(TOPIC, b"one")
                    await until(lambda: got == [b"one"], "the first message")
                    await producer.close()  # (its connection would go silent too)
                    proxy.swallow_up()
                    producer = generous_producer(namesrv.address)
                    await producer.start()
                    await producer.send(TOPIC, b"two")
                    await until(lambda: got == [b"one", b"two"], "the message sent after the silence",
                                timeout_s=40.0)
            finally:
                await producer.close()

    run(scenario())
