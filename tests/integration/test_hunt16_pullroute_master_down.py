"""A topic whose only master is down is consumed from its slave, as a 4.9.3 consumer does: the route still
names the slave for the topic's queues, the group's members are asked of the slave (findConsumerIdList
asks BrokerData.selectBrokerAddr: the master, else a slave), which knows them because consumers send their
heartbeats to slaves too (sendHeartbeatToAllBroker skips slaves only for a client without consumers), the
pulls go to the slave (findBrokerAddressInSubscribe falls back to it) and the offsets are committed there.
Before, a consumer group rebalanced by masters only: with none in the route it took no queue at all and
consumed nothing until the master came back."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, start_slave, stop

from rocketstore.broker import Broker
from rocketstore.client import ConsumedMessage, ConsumeStatus, LitePullConsumer, Producer, PullConsumer, PushConsumer
from rocketstore.client.push_types import ConsumeFromWhere

TOPIC = "OnlyMasterDown"
GROUP = "only-master-down-group"
FAST = {"rebalance_interval_s": 0.3, "heartbeat_interval_s": 0.3, "route_refresh_interval_s": 0.3,
        "persist_interval_s": 0.3, "pull_delay_on_error_s": 0.2,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}


async def slave_only_route(namesrv_addr: str) -> None:
    """Wait until the name server routes the topic by the slave alone."""
    async with PullConsumer(namesrv_addr, "route-reader") as reader:
        for _ in range(400):
            route = await reader.routes.route(TOPIC, refresh=True)
            bd = route.broker("broker-a")
            if bd is not None and bd.master_addr() is None and bd.broker_addrs and route.queue_datas:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"no route with broker-a's slave alone: {route}")


async def until(predicate: object, what: str) -> None:
    for _ in range(600):
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.parametrize("kind", ["push", "lite_pull"])
def test_a_topic_whose_only_master_is_down_is_consumed_from_its_slave(tmp_path: Path, kind: str) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        cluster.create_topic(TOPIC, queues=2)

        async def send() -> list[str]:
            async with Producer(cluster.namesrv_addr, "only-master-down-producer") as producer:
                return [(await producer.send(TOPIC, f"m{i}".encode())).msg_id for i in range(6)]

        sent = cluster.run(send(), 30)
        slave: Broker = start_slave(cluster, tmp_path / "slave")
        try:
            caught_up(cluster, slave)
            assert slave.slave_sync is not None and slave.registrar is not None
            assert cluster.run(slave.slave_sync.sync_once())  # the topic, so the slave routes its queues
            cluster.run(slave.registrar.register_all())
            cluster.run(cluster.broker.close())  # the only master dies; its slave stays
            cluster.run(slave.registrar.register_all())
            cluster.run(slave_only_route(cluster.namesrv_addr), 30)
            got: list[str] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.msg_id for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            async def consume() -> None:
                if kind == "push":
                    async with PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle, long_poll_ms=1000,
                                            **FAST):
                        await until(lambda: len(got) >= len(sent), "the messages from the slave")
                        await until(lambda: sum(slave.offsets.offsets(GROUP, TOPIC).values()) == len(sent),
                                    "the offsets committed to the slave")
                else:
                    async with LitePullConsumer(cluster.namesrv_addr, GROUP, long_poll_ms=1000, **FAST) as consumer:
                        consumer.subscribe(TOPIC)
                        for _ in range(600):
                            got.extend(m.msg_id for m in await consumer.poll(timeout_s=0.1))
                            if len(got) >= len(sent):
                                break
                        await consumer.commit_sync()

            cluster.run(consume(), 90)
            assert Counter(got) == Counter(sent)
            assert cluster.call(lambda: slave.offsets.offsets(GROUP, TOPIC)) == {0: 3, 1: 3}
        finally:
            stop(cluster, slave)
