"""A topic deleted and created again, then the broker killed (session 13's hunt): abnormal recovery must keep
the new topic's consume queue, not rebuild it from the deleted topic's records.

Found with ``rocketstore serve`` and kill -9 (abnormal recovery then rebuilt the queue from the deleted topic's
records and dropped the acknowledged new ones).
"""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import pull_all
from serve_process import ServeProcess, free_port, write_broker_conf

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run


def test_a_recreated_topics_messages_survive_a_kill_9_of_the_broker(tmp_path: Path) -> None:
    """4.9.3 re-dispatches the walked records and the consume queue skips any record ending at or below its
    maxPhysicOffset, so the old topic's records (queue offsets 0..4, before the new queue's entries in the
    commitlog) are skipped and the acknowledged new0, new1 stay at queue offsets 0, 1."""
    topic = "Hunt13Recreated"
    conf = write_broker_conf(tmp_path / "broker.conf")
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    serve = ServeProcess(tmp_path / "store", conf, **ports).start()
    try:
        async def go() -> None:
            async with AdminClient(serve.namesrv_addr) as admin, Producer(serve.namesrv_addr, "hunt13") as producer:
                await admin.create_topic(topic, broker_addr=serve.broker_addr, read_queue_nums=1,
                                         write_queue_nums=1)
                for i in range(5):
                    await producer.send(topic, f"old{i}".encode(), queue_id=0)
                await admin.delete_topic(topic)
                await admin.create_topic(topic, broker_addr=serve.broker_addr, read_queue_nums=1,
                                         write_queue_nums=1)
                for i in range(2):
                    await producer.send(topic, f"new{i}".encode(), queue_id=0)

        run(go())
        wanted = [(0, b"new0"), (1, b"new1")]
        deadline = time.monotonic() + 10
        while (got := [(m.queue_offset, m.body) for m in pull_all(serve.namesrv_addr, topic)]) != wanted:
            assert time.monotonic() < deadline, f"before the kill: {got}"
            time.sleep(0.05)
        serve.kill()  # kill -9: the next start runs abnormal recovery
        serve = ServeProcess(tmp_path / "store", conf, **ports).start()
        assert [(m.queue_offset, m.body) for m in pull_all(serve.namesrv_addr, topic)] == wanted
    finally:
        serve.kill()
