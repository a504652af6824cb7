"""Stopping a broker while replication streams: a slave closed while it catches up, and a master closed while
it sends to a slave, both finish closing.

Python 3.11's ``asyncio.wait_for`` returns the result instead of raising when the task is cancelled just as
the awaited read completes; the HA loops used it around every read, so under a steady stream the close's
cancellation was lost and ``Broker.close()`` (SIGTERM of ``rocketstore broker``) waited forever.  A tiny
transfer batch over a 1 MiB backlog keeps the stream going, as a slave catching up a large backlog does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.message.record import Message
from rocketstore.store.config import StoreConfig

STORE: dict[str, Any] = {**SMALL_STORE, "mapped_file_size_commit_log": 4 << 20}
#: bytes a chunk: ~10,000 chunks for the backlog, so each close below lands mid-stream
TINY_BATCH_BYTES = 97
#: a close that has not finished by then never will (a healthy one takes well under a second)
CLOSE_DEADLINE_S = 15.0


def new_master(cluster: LocalCluster, store_dir: Path) -> Broker:
    config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=0,
                          listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_listen_port=0)
    master = Broker(config, StoreConfig(store_path_root_dir=str(store_dir), **STORE))
    cluster.run(master.start())
    assert master.ha_server is not None
    master.ha_server.batch_bytes = TINY_BATCH_BYTES
    return master


def new_slave(cluster: LocalCluster, master: Broker, store_dir: Path) -> Broker:
    assert master.ha_server is not None
    return cluster.start_slave(store_dir, "broker-b", store_overrides=STORE,
                               ha_master_address=f"127.0.0.1:{master.ha_server.port}")


async def close_mid_stream(closing: Broker, slave: Broker) -> None:
    """Close *closing* as soon as *slave* has its first bytes (looked at every millisecond on the loop)."""
    while slave.store.max_commit_log_offset == 0:
        await asyncio.sleep(0.001)
    await closing.close()


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "unused") as c:
        master = new_master(c, tmp_path / "master")

        def backlog() -> None:
            for i in range(2500):
                master.put_now(Message.create("CloseTopic", f"{i} ".encode() + b"x" * 300, tags="T"))

        c.call(backlog)
        c.run(master.close())
        yield c


def test_a_slave_closed_while_it_catches_up_finishes_closing(cluster: LocalCluster, tmp_path: Path) -> None:
    master = new_master(cluster, tmp_path / "master")
    try:
        for attempt in range(4):
            slave = new_slave(cluster, master, tmp_path / f"slave-{attempt}")
            cluster.run(close_mid_stream(slave, slave), CLOSE_DEADLINE_S)
    finally:
        cluster.run(master.close(), CLOSE_DEADLINE_S)


def test_a_master_closed_while_it_sends_to_a_slave_finishes_closing(cluster: LocalCluster, tmp_path: Path) -> None:
    for attempt in range(4):
        master = new_master(cluster, tmp_path / "master")
        slave = new_slave(cluster, master, tmp_path / f"slave-{attempt}")
        try:
            cluster.run(close_mid_stream(master, slave), CLOSE_DEADLINE_S)
            assert master.ha_server is not None and not master.ha_server.slaves
        finally:
            cluster.run(slave.close(), CLOSE_DEADLINE_S)
