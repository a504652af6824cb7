"""Clients coming and going for days, against a real name server + broker: what a producer or consumer left on
the broker (its registrations, its connection, its parked long polls) goes when it shuts down or its process
is killed (4.9.3's ClientHousekeepingService / doChannelCloseEvent), and a process that starts and shuts down
clients over and over keeps no thread, socket or asyncio task of theirs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from local_cluster import LocalCluster

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer
from rocketstore.client.push_consumer import PushConsumer
from rocketstore.remoting.transport import run

HERE = Path(__file__).resolve().parent
TOPIC = "SoakChurn"


def _broker_tables(cluster: LocalCluster) -> dict[str, int]:
    """What the broker holds for clients (to be called on the cluster's loop)."""
    broker = cluster.broker
    clients = broker.clients
    return {"connections": len(broker.server.connections), "consumer groups": len(clients.consumers),
            "producer groups": len(clients.producers), "client connections": clients.connection_count(),
            "producer ids": clients.producer_id_count(), "parked pulls": broker.pull_hold.waiting_count}


def _forgotten(cluster: LocalCluster) -> bool:
    """The broker holds nothing for any client (on the cluster's loop)."""
    return not any(_broker_tables(cluster).values())


def _sockets() -> int:
    """Open sockets of this process (the broker's store files opened for queues written first meanwhile do not
    count: they stay open as they should)."""
    fd_dir = f"/proc/{os.getpid()}/fd"
    count = 0
    for fd in os.listdir(fd_dir):
        try:
            count += os.readlink(f"{fd_dir}/{fd}").startswith("socket:")
        except OSError:  # closed meanwhile
            pass
    return count


def test_clients_started_and_shut_down_over_and_over_leave_nothing_behind(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 4)

        async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        async def churn(rounds: int) -> list[str]:
            for i in range(rounds):
                async with Producer(cluster.namesrv_addr, f"soak-producer-{i % 3}") as producer:
                    await producer.send(TOPIC, b"churn")
                consumer = PushConsumer(cluster.namesrv_addr, f"soak-consumer-{i % 2}", {TOPIC: "*"}, handle,
                                        heartbeat_interval_s=0.2, rebalance_interval_s=0.2,
                                        consume_from_where="CONSUME_FROM_FIRST_OFFSET")
                await consumer.start()
                await asyncio.sleep(0.1)
                await consumer.shutdown()
            await asyncio.sleep(0)
            return [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]

        # a first round starts what stays for the cluster's life (its loop's default executor, ...)
        assert run(churn(2)) == [], "asyncio tasks left by shut-down clients"
        cluster.wait_until(lambda: _forgotten(cluster), 20, "the broker to forget the first clients")
        threads_before, sockets_before = {t.ident for t in threading.enumerate()}, _sockets()
        assert run(churn(20)) == [], "asyncio tasks left by shut-down clients"
        cluster.wait_until(lambda: _forgotten(cluster), 20, "the broker to forget every client")
        cluster.wait_until(lambda: {t.ident for t in threading.enumerate()} <= threads_before, 20,
                           "the clients' threads to end")
        cluster.wait_until(lambda: _sockets() <= sockets_before, 20, "the clients' sockets to close")


def test_a_consumer_process_killed_holding_long_polls_is_forgotten(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 4)
        child = subprocess.Popen([sys.executable, str(HERE / "push_consumer_child.py"), cluster.namesrv_addr,
                                  TOPIC, "soak-killed-group", str(tmp_path / "out.txt")],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "started"
            cluster.wait_until(lambda: _broker_tables(cluster)["parked pulls"] >= 4, 20,
                               "the child's long polls")
            assert cluster.call(lambda: cluster.broker.clients.consumer_ids("soak-killed-group"))
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            cluster.wait_until(lambda: _forgotten(cluster), 20,
                               "the broker to forget the killed client")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
