"""``rocketstore message query -k KEY`` (with and without a time window) while the topic's master is down: the
slave's index holds the same keys, and 4.9.3's MQAdminImpl.queryMessage asks each broker of the route at
BrokerData.selectBrokerAddr (the master, else one of its slaves), so the messages are still found."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

from rocketstore.broker import Broker
from rocketstore.client.admin import AdminClient
from rocketstore.message.record import Message
from rocketstore.remoting.bodies import MASTER_ID
from rocketstore.remoting.transport import run

TOPIC = "LookSlaveQuery"
KEY = "slave-key"
BASE_MS = 1_700_000_000_000


def _seconds(found: list[dict[str, Any]]) -> list[int]:
    return [(m["storeTimestamp"] - BASE_MS) // 1000 for m in found]


@pytest.fixture(scope="module")
def master_and_slave(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Broker]]:
    root: Path = tmp_path_factory.mktemp("lookups-slave")
    with LocalCluster(root / "master") as cluster:
        slave = cluster.start_slave(root / "slave", cluster.broker_name)
        try:
            cluster.create_topic(TOPIC)
            for second in (1, 2, 3, 4):
                message = Message.create(TOPIC, f"at {second}".encode(), keys=KEY,
                                         store_timestamp=BASE_MS + second * 1000)
                assert cluster.call(lambda m=message: cluster.broker.store.put(m)).ok  # type: ignore[misc]
            cluster.wait_slave_synced(slave)
            yield cluster, slave
        finally:
            cluster.run(slave.close())


def test_query_by_key_asks_the_master_once_while_it_is_up(master_and_slave: tuple[LocalCluster, Broker],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = master_and_slave
    # master and slave hold the same messages: asking both would answer each twice
    assert _seconds(ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY)) == [1, 2, 3, 4]


def test_query_by_key_reads_the_slave_while_the_master_is_down(master_and_slave: tuple[LocalCluster, Broker],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = master_and_slave
    cluster.run(cluster.broker.close())  # the master goes away (it unregisters); the slave stays

    async def slave_only_route() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            for _ in range(200):
                datas = (await admin.route(TOPIC)).broker_datas
                if datas and all(MASTER_ID not in bd.broker_addrs for bd in datas):
                    return
                await asyncio.sleep(0.05)
        raise AssertionError("the route still lists the master")

    run(slave_only_route())
    assert _seconds(ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY)) == [1, 2, 3, 4]
    window = ("--begin", str(BASE_MS + 2000), "--end", str(BASE_MS + 3000))
    assert _seconds(ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY, *window)) == [2, 3]
