"""``Producer.send(..., flag=N)`` sends the message's flag, as 4.9.3's producer sends Message.getFlag in
SendMessageRequestHeader's ``flag`` field (extField ``h`` of SEND_MESSAGE_V2), and the broker stores it.
The producer sent 0 whatever the caller wanted (the Spark sink's ``flag`` column goes through here)."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, wait_stored

from rocketstore.client import Producer
from rocketstore.remoting.transport import run


def test_a_sends_flag_is_stored_with_its_message(tmp_path: Path) -> None:
    topic = "Hunt30ProducerFlag"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def traffic() -> None:
            async with Producer(cluster.namesrv_addr, "flag-producer") as producer:
                await producer.send(topic, b"small", flag=-7)
                await producer.send(topic, b"tagged", tags="T", keys="k", flag=2147483647)
                await producer.send(topic, b"x" * (64 << 10), flag=5)  # compressed, past the frame templates
                await producer.send(topic, b"plain")

        run(traffic())
        stored = {m.body[:6]: m.flag for m in wait_stored(cluster, topic, 4, "the sends", queues=1)}
    assert stored[b"small"] == -7 and stored[b"tagged"] == 2147483647 and stored[b"plain"] == 0
    assert [f for body, f in stored.items() if body not in (b"small", b"tagged", b"plain")] == [5]


def test_the_blocking_producers_sends_carry_the_flag_too(tmp_path: Path) -> None:
    from rocketstore.client import BlockingProducer

    topic = "Hunt30BlockingFlag"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        with BlockingProducer(cluster.namesrv_addr, "flag-blocking") as producer:
            producer.send(topic, b"sync", flag=3)
            producer.send_async(topic, b"async", flag=4).result(30)
        stored = {m.body: m.flag for m in wait_stored(cluster, topic, 2, "the sends", queues=1)}
    assert stored == {b"sync": 3, b"async": 4}
