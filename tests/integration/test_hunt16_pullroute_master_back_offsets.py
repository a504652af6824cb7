"""A master that comes back after its slave took a consumer's offset commits gets those offsets at the
consumer's next persist, as 4.9.3's RemoteBrokerOffsetStore.persistAll commits every offset every time (to
the master again once the route names it).  Before, the consumer committed an offset only when it had
changed since its last commit, wherever that went: offsets committed to the slave during the outage did
not reach the master until the consumer's next pull from the master carried them, so a consumer stopped
(or a group rebalanced) before that pull left the master with its old offsets, and whoever took the queues
next consumed those messages again (the slave's own copy is then overwritten from the master by the slave
sync, as 4.9.3's is).  Here the consumer's pull stays held on the slave (a long poll longer than the test),
so only the offset persist can bring the offsets to the master."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster
from serve_process import free_port
from test_hunt16_pullroute_master_down import until
from test_replication import STORE

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PullConsumer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.push_types import ConsumeFromWhere
from rocketstore.store.config import StoreConfig

TOPIC = "MasterBackOffsets"
GROUP = "master-back-offsets-group"
STORE_CONFIG = {**SMALL_STORE, **STORE}


async def route_has_master(namesrv_addr: str, present: bool) -> None:
    async with PullConsumer(namesrv_addr, "route-reader") as reader:
        for _ in range(400):
            route = await reader.routes.route(TOPIC, refresh=True)
            bd = route.broker("broker-b")
            if bd is not None and (bd.master_addr() is not None) is present and route.queue_datas:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"no route {'with' if present else 'without'} the master: {route}")


def test_offsets_committed_to_the_slave_reach_the_master_when_it_comes_back(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "unused") as cluster:
        port, ha_port = free_port(), free_port()
        master_config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=port,
                                     listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=ha_port)

        def start_master() -> Broker:
            master = Broker(master_config, StoreConfig(store_path_root_dir=str(tmp_path / "master"), **STORE_CONFIG))
            cluster.run(master.start())
            return master

        master = start_master()
        slave = cluster.start_slave(tmp_path / "slave", "broker-b", store_overrides=STORE_CONFIG)
        consumer: PushConsumer | None = None
        try:
            async def create_and_send() -> list[str]:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.create_topic(TOPIC, broker_addr=master.address, read_queue_nums=2,
                                             write_queue_nums=2)
                async with Producer(cluster.namesrv_addr, "master-back-offsets-producer") as producer:
                    return [(await producer.send(TOPIC, f"m{i}".encode())).msg_id for i in range(6)]

            sent = cluster.run(create_and_send(), 30)
            cluster.wait_until(lambda: slave.store.max_commit_log_offset == master.store.max_commit_log_offset
                               and slave.store.dispatch_behind_bytes == 0, 30, "the slave to catch up")
            assert slave.slave_sync is not None and slave.registrar is not None
            assert cluster.run(slave.slave_sync.sync_once())
            cluster.run(master.close())
            cluster.run(slave.registrar.register_all())
            cluster.run(route_has_master(cluster.namesrv_addr, False), 30)
            got: list[str] = []

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                got.extend(m.msg_id for m in messages)
                return ConsumeStatus.CONSUME_SUCCESS

            # pulls held on the slave far longer than this test runs: they never reach the master
            consumer = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle, long_poll_ms=600_000,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    rebalance_interval_s=0.3, heartbeat_interval_s=0.3, route_refresh_interval_s=0.3,
                                    persist_interval_s=0.3, pull_delay_on_error_s=0.2)

            async def consume_on_the_slave() -> None:
                assert consumer is not None
                await consumer.start()
                await until(lambda: len(got) >= len(sent), "the messages from the slave")
                await until(lambda: slave.offsets.offsets(GROUP, TOPIC) == {0: 3, 1: 3},
                            "the offsets committed to the slave")

            cluster.run(consume_on_the_slave(), 60)
            assert Counter(got) == Counter(sent)
            master = start_master()  # back, with the offsets it had: none for the group
            assert cluster.call(lambda: master.offsets.offsets(GROUP, TOPIC)) == {}
            cluster.run(route_has_master(cluster.namesrv_addr, True), 30)
            cluster.run(until(lambda: master.offsets.offsets(GROUP, TOPIC) == {0: 3, 1: 3},
                              "the offsets committed to the master"), 60)
        finally:
            if consumer is not None:
                cluster.run(consumer.shutdown(), 30)
            cluster.run(slave.close())
            cluster.run(master.close())
