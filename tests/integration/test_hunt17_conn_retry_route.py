"""A send whose broker is gone is retried on another broker with the route it started with, as 4.9.3's
DefaultMQProducerImpl.sendDefaultImpl retries with the TopicPublishInfo it looked up once: a name server that
stops answering (SIGSTOP: its socket still accepts) must not eat the retry's time.  Real name server process,
brokers and producer on 127.0.0.1; outcomes only."""

from __future__ import annotations

import signal
from pathlib import Path

from local_cluster import eventually, run_within
from serve_process import free_port
from test_hunt15_namesrv2_processes import NamesrvProcess, _broker

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient

TOPIC = "Hunt17ConnRetryTopic"


def test_a_dead_brokers_send_is_retried_on_the_other_while_the_name_server_hangs(tmp_path: Path) -> None:
    namesrv = NamesrvProcess(tmp_path / "ns", free_port()).start()

    async def go() -> list[str]:
        broker_a = await _broker(tmp_path, "broker-a", namesrv.address)
        broker_b = await _broker(tmp_path, "broker-b", namesrv.address)
        closed = []
        try:
            async with AdminClient(namesrv.address) as admin:
                for broker in (broker_a, broker_b):
                    await admin.create_topic(TOPIC, broker_addr=broker.address, read_queue_nums=2,
                                             write_queue_nums=2)

                async def routed_on_both() -> bool:
                    return len((await admin.route(TOPIC)).queue_datas) == 2

                await eventually(routed_on_both, 20, "the topic routed on both brokers")
            async with Producer(namesrv.address, "hunt17-conn-retry-pg", timeout_s=3.0) as producer:
                for i in range(4):  # the route is cached, both brokers' connections open
                    await producer.send(TOPIC, f"warm-up {i}".encode())
                namesrv.signal(signal.SIGSTOP)  # hangs from here on: asked, it never answers
                await broker_b.close()  # refuses connections now; the cached route still names it
                closed.append(broker_b)
                results = [await producer.send(TOPIC, f"m{i}".encode()) for i in range(6)]
                return [r.message_queue.broker_name for r in results]
        finally:
            namesrv.signal(signal.SIGCONT)
            await broker_a.close()
            if not closed:
                await broker_b.close()

    try:
        brokers = run_within(go, 120)
    finally:
        namesrv.kill()
    assert brokers == ["broker-a"] * 6
