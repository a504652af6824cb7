"""Name servers as separate processes (``rocketstore namesrv``), stopped (SIGSTOP), killed (kill -9) and
restarted, with brokers that register with all of them and clients given "a;b" (4.9.3's BrokerOuterAPI,
NettyRemotingClient).  Real processes and clients on 127.0.0.1."""

from __future__ import annotations

import asyncio
import functools
import signal
import subprocess
import sys
from pathlib import Path

from local_cluster import SMALL_STORE, eventually, run_within
from serve_process import env, free_port

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.namesrv import NameServer
from rocketstore.store.config import StoreConfig

WAIT_S = 20.0  # a deadline for waiting, far beyond what each step takes


class NamesrvProcess:
    """``rocketstore namesrv`` in a subprocess, its files under *home*, on *port* (kept across a restart)."""

    def __init__(self, home: Path, port: int) -> None:
        self.home = home
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> NamesrvProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        conf = self.home / "namesrv.conf"
        conf.write_text(f"kvConfigPath={self.home / 'kvConfig.json'}\n"
                        f"configStorePath={self.home / 'namesrv.properties'}\n", encoding="utf-8")
        self.proc = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", "namesrv", "-p", str(self.port),
                                      "-c", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once it listens (bounded by the test's own deadline)
        assert self.address in line, f"namesrv did not start: {line!r}"
        return self

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)


async def _broker(tmp_path: Path, name: str, namesrv_addr: str, **config: object) -> Broker:
    broker = Broker(BrokerConfig(broker_name=name, namesrv_addr=namesrv_addr, listen_port=0, listen_host="127.0.0.1",
                                 broker_ip1="127.0.0.1", **config),  # type: ignore[arg-type]
                    StoreConfig(store_path_root_dir=str(tmp_path / name), **SMALL_STORE))
    await broker.start()
    return broker


def test_a_stopped_name_server_does_not_hold_new_topics_back_from_the_others(tmp_path: Path) -> None:
    """A name server that stops answering (SIGSTOP: its socket still accepts) keeps a registration waiting up
    to registerBrokerTimeoutMills.  4.9.3 registers a new topic from the thread that created it, so the other
    name servers learn it at once; here the next registration waited for that round to time out (60 s with
    this broker's registerBrokerTimeoutMills), so the healthy name server did not learn the second topic."""
    a = NamesrvProcess(tmp_path / "ns-a", free_port()).start()

    async def go() -> None:
        b = NameServer()
        await b.start("127.0.0.1", 0)
        broker = await _broker(tmp_path, "broker-a", f"{a.address};{b.address}", register_broker_timeout_ms=60_000)
        try:
            async with AdminClient(b.address) as admin:
                a.signal(signal.SIGSTOP)
                for topic in ("StoppedNs0", "StoppedNs1"):
                    await admin.create_topic(topic, broker_addr=broker.address)
                    await eventually(functools.partial(b.routes.route, topic), WAIT_S,
                                     f"{topic} on the running name server")
                a.signal(signal.SIGCONT)
                # the stopped one catches up with the newest registration once it answers again
                async with AdminClient(a.address) as admin_a:
                    async def a_knows() -> bool:
                        try:
                            return bool(await admin_a.route("StoppedNs1"))
                        except Exception:  # noqa: BLE001 - not yet
                            return False

                    await eventually(a_knows, WAIT_S, "StoppedNs1 on the name server that was stopped")
        finally:
            a.signal(signal.SIGCONT)
            await broker.close()
            await b.close()

    try:
        run_within(go, 90)
    finally:
        a.kill()


def test_clients_and_brokers_go_on_when_a_name_server_is_killed_and_it_learns_again_when_back(
        tmp_path: Path) -> None:
    """kill -9 of one of two name servers mid-run: the broker goes on registering with the other, a producer
    and a push consumer given "a;b" go on sending and consuming and see a broker that joins afterwards; the
    name server restarted on its port (empty) learns the brokers at their next registration."""
    a = NamesrvProcess(tmp_path / "ns-a", free_port()).start()
    b = NamesrvProcess(tmp_path / "ns-b", free_port()).start()
    addrs = f"{a.address};{b.address}"
    topic = "KilledNsTopic"

    async def go() -> None:
        broker_a = await _broker(tmp_path, "broker-a", addrs, register_name_server_period_ms=10_000)
        brokers = [broker_a]
        got: list[bytes] = []

        def handle(messages: list) -> ConsumeStatus:  # type: ignore[type-arg]
            got.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS

        try:
            async with AdminClient(addrs) as admin:
                await admin.create_topic(topic, broker_addr=broker_a.address, read_queue_nums=2, write_queue_nums=2)
            async with Producer(addrs, "killed-ns-producer", timeout_s=3) as producer, \
                    PushConsumer(addrs, "killed-ns-consumer", {topic: "*"}, handle, route_refresh_interval_s=0.3,
                                 rebalance_interval_s=0.3, heartbeat_interval_s=0.5) as consumer:
                await eventually(lambda: len(consumer.assignment(topic)) == 2, WAIT_S, "two queues assigned")
                for i in range(4):
                    await producer.send(topic, f"before {i}".encode())
                a.kill()  # kill -9
                producer.routes.expire()
                for i in range(4):
                    await producer.send(topic, f"after {i}".encode())
                # a broker that joins now is seen through the name server still running
                broker_b = await _broker(tmp_path, "broker-b", addrs, register_name_server_period_ms=10_000)
                brokers.append(broker_b)
                async with AdminClient(b.address) as admin:
                    await admin.create_topic(topic, broker_addr=broker_b.address, read_queue_nums=2,
                                             write_queue_nums=2)
                await eventually(lambda: len(consumer.assignment(topic)) == 4, WAIT_S, "four queues assigned")
                producer.routes.expire()
                sent = [await producer.send(topic, f"joined {i}".encode()) for i in range(8)]
                assert {s.message_queue.broker_name for s in sent} == {"broker-a", "broker-b"}
                await eventually(lambda: len(got) == 16, WAIT_S, "every message consumed")
                assert sorted(got) == sorted([f"before {i}".encode() for i in range(4)]
                                             + [f"after {i}".encode() for i in range(4)]
                                             + [f"joined {i}".encode() for i in range(8)])
            # restarted on its port, empty: the brokers' next registration (10 s period) tells it everything
            await asyncio.to_thread(a.start)
            async with AdminClient(a.address) as admin_a:
                async def both_brokers() -> bool:
                    try:
                        route = await admin_a.route(topic)
                    except Exception:  # noqa: BLE001 - not yet
                        return False
                    return {q.broker_name for q in route.queue_datas} == {"broker-a", "broker-b"}

                await eventually(both_brokers, WAIT_S, "the restarted name server to know both brokers")
        finally:
            for broker in brokers:
                await broker.close()

    try:
        run_within(go, 120)
    finally:
        a.kill()
        b.kill()
