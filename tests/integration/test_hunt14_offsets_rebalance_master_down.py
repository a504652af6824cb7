"""A clustering consumer rebalances while the master of the first broker of its topic is down (its slave
still serves the queues, so they stay in the route): the group's client ids are asked of a broker that
has a master in the route now.  Asking only the first queue's broker gave nothing, so the consumer took
no queue at all and consumed nothing, not even the messages the other broker's master holds; 4.9.3
(findConsumerIdList asks a broker picked from the route, a slave included) goes on consuming."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster
from test_replication import STORE, start_slave, stop

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import (
    ConsumedMessage,
    ConsumeStatus,
    MessageQueue,
    Producer,
    PullConsumer,
    PushConsumer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.push_types import ConsumeFromWhere
from rocketstore.store.config import StoreConfig

TOPIC = "MasterDownRebalance"


def test_a_consumer_takes_the_live_brokers_queues_while_the_first_brokers_master_is_down(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "a", ha_listen_port=0, store_overrides=STORE) as cluster:
        other = Broker(BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=0,
                                    listen_host="127.0.0.1", broker_ip1="127.0.0.1"),
                       StoreConfig(store_path_root_dir=str(tmp_path / "b"), **SMALL_STORE))
        cluster.run(other.start())
        slave = None
        try:
            cluster.create_topic(TOPIC, queues=2)

            async def create_on_b() -> None:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.create_topic(TOPIC, broker_addr=other.address, read_queue_nums=2,
                                             write_queue_nums=2)

            cluster.run(create_on_b())
            slave = start_slave(cluster, tmp_path / "slave")
            assert slave.slave_sync is not None and slave.registrar is not None
            assert cluster.run(slave.slave_sync.sync_once())
            cluster.run(slave.registrar.register_all())  # the slave routes broker-a's queues too
            cluster.run(cluster.broker.close())  # broker-a's master dies; its slave stays
            got: list[str] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.msg_id for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            async def go() -> None:
                async with PullConsumer(cluster.namesrv_addr, "route-reader") as reader:
                    for _ in range(200):  # until the name server routes broker-a by its slave alone
                        route = await reader.routes.route(TOPIC, refresh=True)
                        names = {bd.broker_name: bd for bd in route.broker_datas}
                        if set(names) == {"broker-a", "broker-b"} and names["broker-a"].master_addr() is None \
                                and {q.broker_name for q in route.queue_datas} == {"broker-a", "broker-b"}:
                            break
                        await asyncio.sleep(0.05)
                    else:
                        raise AssertionError(f"no route with broker-a's slave alone: {route}")
                async with Producer(cluster.namesrv_addr, "master-down-producer") as producer:
                    sent = [(await producer.send(TOPIC, f"m{i}".encode())).msg_id for i in range(4)]
                consumer = PushConsumer(cluster.namesrv_addr, "master-down-group", {TOPIC: "*"}, handle,
                                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                        rebalance_interval_s=0.5, heartbeat_interval_s=0.5, long_poll_ms=1000,
                                        pull_delay_on_error_s=0.2)
                async with consumer:
                    for _ in range(300):
                        if len(got) >= len(sent):
                            break
                        await asyncio.sleep(0.05)
                    mine = consumer.assignment(TOPIC)
                assert {MessageQueue(TOPIC, "broker-b", q) for q in (0, 1)} <= mine, mine
                assert Counter(got) == Counter(sent)

            cluster.run(go(), 60)
        finally:
            if slave is not None:
                stop(cluster, slave)
            cluster.run(other.close())
