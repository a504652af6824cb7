"""The official C++ client's push consumer (PyPI ``rocketmq`` 0.4.4) consuming from ``rocketstore serve`` while
the server is killed (kill -9) and restarted on the same store and ports (session 15's crash hunt): every
message a send had acknowledged (SYNC_FLUSH), before the kill and after the restart, reaches the consumer; it
may see some twice, it may not miss one.  Deadlines only, no durations asserted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from cpp_driver import Runner, messages, requires_cpp_client
from serve_process import ServeProcess, free_port, write_broker_conf

from rocketstore.client import ClientError, Producer
from rocketstore.client.admin import AdminClient
from rocketstore.errors import RocketStoreError
from rocketstore.remoting.transport import run

pytestmark = requires_cpp_client

TOPIC = "Hunt15CppCrash"


async def _send(serve: ServeProcess, tag: str, count: int, acked: set[str], kill_at: int | None = None) -> None:
    """*count* sends one after the other; the server killed before send *kill_at*; stops at the first failure."""
    async with Producer(serve.namesrv_addr, "hunt15-cpp-crash", retry_times=0) as producer:
        for i in range(count):
            if i == kill_at:
                await asyncio.to_thread(serve.kill)
            body = f"{tag}-{i}"
            try:
                result = await producer.send(TOPIC, body.encode())
            except (RocketStoreError, ClientError, OSError):
                return
            assert result.status == "SEND_OK"
            acked.add(body)
            await asyncio.sleep(0.002)  # the consumer is busy while the kill comes


def _start(store: Path, conf: Path, ports: tuple[int, int]) -> ServeProcess:
    return ServeProcess(store, conf, namesrv_port=ports[0], broker_port=ports[1]).start()


def test_the_cpp_push_consumer_misses_no_acknowledged_message_across_a_kill_9(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    store, conf = tmp_path / "store", write_broker_conf(tmp_path / "broker.conf", flushDiskType="SYNC_FLUSH")
    ports = (free_port(), free_port())  # the name server's and the broker's, the same on every start
    serve = _start(store, conf, ports)
    consumer: Runner | None = None
    acked: set[str] = set()
    try:
        async def create() -> None:
            async with AdminClient(serve.namesrv_addr) as admin:
                await admin.create_topic(TOPIC, broker_addr=serve.broker_addr, read_queue_nums=4, write_queue_nums=4)

        run(create())
        consumer = Runner(["consume", serve.namesrv_addr, TOPIC, "hunt15-cpp-crash-group"], home)
        consumer.collect_until(lambda seen: any(s.get("started") for s in seen), 30, "the C++ consumer to start")
        run(_send(serve, "before", 400, acked, kill_at=200))
        assert len(acked) == 200, "every send before the kill acknowledged, none after it"
        serve = _start(store, conf, ports)
        run(_send(serve, "after", 100, acked))
        assert len(acked) == 300
        consumer.collect_until(lambda seen: acked <= {m["body"] for m in messages(seen)}, 90,
                               "every acknowledged message at the C++ consumer")
    finally:
        if consumer is not None:
            consumer.kill()
        serve.kill()
