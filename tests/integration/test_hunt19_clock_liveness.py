"""Liveness survives a wall-clock step: a real name server, a real broker and real client connections on
127.0.0.1 port 0, with ``time.time`` moved an hour forward (an NTP step, a resumed VM) part way through.

4.9.3 dates broker registrations, client heartbeats and queue locks with currentTimeMillis, so such a step
expires every broker on the name server (routes gone until each registers again), drops every client of a
broker (connections closed, groups told to rebalance) and frees every orderly-consumption lock (a second
member of the group gets a queue its owner is still consuming).  These times are never shown, so here they
are monotonic; the tests drive the real scans (their own loops, fast intervals) and watch what they drop.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, eventually, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker import broker as broker_module
from rocketstore.namesrv import NameServer
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, TopicConfig
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import connect
from rocketstore.store.config import StoreConfig

HOUR_S = 3600.0
GROUP = "Hunt19ClockGroup"


def _step_wall_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The wall clock jumps by *seconds* (every reader of time.time sees it; the monotonic clock does not)."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


class _Counting:
    """Wraps a real scan method: counts its passes and keeps what each returned."""

    def __init__(self, method: Any) -> None:
        self.method = method
        self.results: list[Any] = []

    def __call__(self, *args: Any) -> Any:
        result = self.method(*args)
        self.results.append(result)
        return result


async def _broker(tmp_path: Path, namesrv_addr: str | None) -> Broker:
    config = BrokerConfig(broker_name="broker-clock", namesrv_addr=namesrv_addr, listen_port=0,
                          listen_host="127.0.0.1", broker_ip1="127.0.0.1")
    broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "broker"), **SMALL_STORE))
    await broker.start()
    return broker


def test_a_wall_clock_step_forward_does_not_expire_registered_brokers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        namesrv = NameServer(scan_interval_s=0.05)  # the default 120 s broker expiry
        await namesrv.start("127.0.0.1", 0)
        broker = await _broker(tmp_path, namesrv.address)
        try:
            await eventually(lambda: namesrv.routes.live, 10, "the broker's registration")
            [addr] = list(namesrv.routes.live)
            assert broker.registrar is not None
            broker.registrar.period_s = 3600.0  # no registration after the step: the scan alone decides
            scans = _Counting(namesrv.routes.expire_connections)
            monkeypatch.setattr(namesrv.routes, "expire_connections", scans)
            _step_wall_clock(monkeypatch, HOUR_S)
            await eventually(lambda: len(scans.results) >= 3, 10, "three broker scans after the step")
            assert all(not gone for gone in scans.results), scans.results
            assert addr in namesrv.routes.live
        finally:
            await broker.close()
            await namesrv.close()

    run_within(scenario, 60)


def test_a_wall_clock_step_forward_does_not_drop_connected_clients(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_module, "CLIENT_SCAN_INTERVAL_S", 0.05)

    async def scenario() -> None:
        broker = await _broker(tmp_path, None)
        conn = await connect(broker.address)
        try:
            beat = HeartbeatData("127.0.0.1@clock", ("Hunt19ClockProducers",), (ConsumerData(GROUP),))
            reply = await conn.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=beat.encode()), 5)
            assert reply.code == ResponseCode.SUCCESS, reply.remark
            assert broker.clients.consumer_ids(GROUP) == ["127.0.0.1@clock"]
            scans = _Counting(broker.clients.expire)
            monkeypatch.setattr(broker.clients, "expire", scans)
            _step_wall_clock(monkeypatch, HOUR_S)
            await eventually(lambda: len(scans.results) >= 3, 10, "three client scans after the step")
            assert all(result == ([], []) for result in scans.results), scans.results
            assert broker.clients.consumer_ids(GROUP) == ["127.0.0.1@clock"]
            assert broker.clients.producer_channels("Hunt19ClockProducers")
            assert not conn.is_closed
        finally:
            await conn.aclose()
            await broker.close()

    run_within(scenario, 60)


@pytest.mark.parametrize("step_s", [HOUR_S, -HOUR_S])
def test_an_orderly_queue_lock_outlives_neither_more_nor_less_after_a_wall_clock_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step_s: float) -> None:
    """Forward: the owner's fresh lock must not look an hour old to a second member.  Back: a lock the
    owner has not renewed for longer than lockMaxLiveTime (shortened here) must not look fresh."""
    async def scenario() -> None:
        broker = await _broker(tmp_path, None)
        broker.queue_locks.max_live_ms = 300 if step_s < 0 else 60_000
        # a topic and group the broker holds: it grants no lock on made-up ones
        broker.topics.update(TopicConfig("T", 1, 1))
        broker.groups.find_or_create(GROUP)
        conn = await connect(broker.address)

        async def lock(client_id: str) -> list[Any]:
            mq = {"topic": "T", "brokerName": "broker-clock", "queueId": 0}
            body = json.dumps({"consumerGroup": GROUP, "clientId": client_id, "mqSet": [mq]}).encode()
            reply = await conn.request(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body), 5)
            assert reply.code == ResponseCode.SUCCESS, reply.remark
            return list(json.loads(reply.body)["lockOKMQSet"])

        try:
            assert await lock("127.0.0.1@owner")
            _step_wall_clock(monkeypatch, step_s)
            if step_s > 0:
                assert await lock("127.0.0.1@other") == [], "a fresh lock was taken over after the step"
            else:
                # the owner is gone; its lock lives lockMaxLiveTime (300 ms here), then another member gets it
                await eventually(lambda: lock("127.0.0.1@other"), 10, "the dead owner's lock to expire")
        finally:
            await conn.aclose()
            await broker.close()

    run_within(scenario, 60)
