"""CLEAN_UNUSED_TOPIC and CLEAN_EXPIRED_CONSUMEQUEUE (mqadmin cleanUnusedTopic / cleanExpiredCQ) against a real
name server + broker, through AdminClient and ``rocketstore topic clean-unused`` / ``clean-expired-cq``: the
broker drops the consume queues of topics its topic table no longer has, or whose messages retention deleted,
and every other queue keeps serving its messages."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored
from serve_process import cli

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting import RemotingCommand, RequestCode
from rocketstore.remoting.codes import ResponseCode
from rocketstore.remoting.transport import run

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


async def send(cluster: LocalCluster, topic: str, count: int, *, body_bytes: int = 8,
               properties: dict[str, str] | None = None) -> None:
    async with Producer(cluster.namesrv_addr, "cleanup-producer") as producer:
        for i in range(count):
            await producer.send(topic, f"{topic}-{i}".encode().ljust(body_bytes, b"."), properties=properties)


def topics(cluster: LocalCluster) -> dict[str, list[int]]:
    return cluster.call(cluster.broker.store.topics)


def test_deleting_a_topic_drops_its_consume_queues(tmp_path: Path) -> None:
    """DELETE_TOPIC_IN_BROKER runs cleanUnusedTopic after removing the config, as 4.9.3's deleteTopic."""
    with LocalCluster(tmp_path / "store") as cluster:
        run(send(cluster, "KeepTopic", 4))
        run(send(cluster, "DropTopic", 8))
        wait_stored(cluster, "DropTopic", 8, "the messages to drop")

        async def delete_topic() -> RemotingCommand:
            async with AdminClient(cluster.namesrv_addr) as admin:
                conn = await admin.pool.get(cluster.broker_addr)
                return await conn.request(RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER,
                                                                  {"topic": "DropTopic"}), 5)

        assert run(delete_topic()).code == ResponseCode.SUCCESS
        assert "DropTopic" not in topics(cluster)
        assert not (tmp_path / "store" / "consumequeue" / "DropTopic").exists()
        assert len(stored_messages(cluster, "KeepTopic")) == 4


def test_clean_unused_drops_the_queues_of_topics_the_broker_no_longer_has(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        run(send(cluster, "KeepTopic", 8))
        run(send(cluster, "DropTopic", 8))
        run(send(cluster, "DelayedTopic", 2, properties={"DELAY": "18"}))  # waits in SCHEDULE_TOPIC_XXXX
        wait_stored(cluster, "DropTopic", 8, "the messages to drop")
        cluster.call(lambda: cluster.broker.offsets.commit("drop-readers", "DropTopic", 0, 2))

        # the topic config gone without the clean-up DELETE_TOPIC_IN_BROKER runs with it (a topics.json
        # edited while the broker was down, or a broker that crashed between the two)
        cluster.call(lambda: cluster.broker.topics.delete("DropTopic"))
        before = topics(cluster)
        assert "DropTopic" in before
        out = cli("topic", "clean-unused", "-b", cluster.broker_addr, "-n", cluster.namesrv_addr, "--json")
        assert out.returncode == 0, out.stderr
        dropped = json.loads(out.stdout)[cluster.broker_addr]
        assert dropped == [{"topic": "DropTopic", "queueId": q} for q in before["DropTopic"]]

        after = topics(cluster)
        assert "DropTopic" not in after
        assert {t: q for t, q in after.items()} == {t: q for t, q in before.items() if t != "DropTopic"}
        assert SCHEDULE_TOPIC in after and "KeepTopic" in after
        assert not (tmp_path / "store" / "consumequeue" / "DropTopic").exists()
        assert len(stored_messages(cluster, "KeepTopic")) == 8
        assert cluster.call(lambda: cluster.broker.offsets.offsets("drop-readers", "DropTopic")) == {0: 2}, \
            "consumer offsets are the broker's: left alone, as 4.9.3 leaves them"

        # nothing left to drop, on every broker of every cluster (the default)
        out = cli("topic", "clean-unused", "-n", cluster.namesrv_addr)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"{cluster.broker_addr}: dropped nothing"

        # the topic comes back (auto-created) with new queues that start at offset 0
        run(send(cluster, "DropTopic", 4))
        found = wait_stored(cluster, "DropTopic", 4, "the new messages")
        by_queue: dict[int, list[int]] = {}
        for m in found:
            by_queue.setdefault(m.queue_id, []).append(m.queue_offset)
        assert all(sorted(offsets) == list(range(len(offsets))) for offsets in by_queue.values()), by_queue


def _age_commitlog(store_dir: Path, hours: float) -> None:
    past = time.time() - hours * 3600
    for f in (store_dir / "commitlog").iterdir():
        os.utime(f, (past, past))


@pytest.mark.parametrize("through", ["admin", "cli"])
def test_clean_expired_drops_the_queues_retention_emptied(tmp_path: Path, through: str) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides={"mapped_file_size_commit_log": 64 << 10}) as cluster:
        run(send(cluster, "OldTopic", 40, body_bytes=1000))
        run(send(cluster, "OldDelayed", 2, body_bytes=1000, properties={"DELAY": "18"}))
        run(send(cluster, "NewTopic", 200, body_bytes=1000))
        wait_stored(cluster, "NewTopic", 200, "the newer messages")
        cluster.wait_dispatched()
        store = cluster.broker.store

        _age_commitlog(store_dir, 100)
        report = cluster.call(lambda: store.delete_expired_files(force=True))
        assert report.commit_log_files_deleted > 0
        assert stored_messages(cluster, "OldTopic") == [], "retention took every old message"

        def emptied() -> list[tuple[str, int]]:
            return sorted((t, q) for t, qs in store.topics().items() for q in qs
                          if t != SCHEDULE_TOPIC and store.min_offset(t, q) == store.max_offset(t, q))

        expected = cluster.call(emptied)
        assert [k for k in expected if k[0] == "OldTopic"] == [("OldTopic", q) for q in range(4)]
        kept_new = {k for k in cluster.call(lambda: [(t, q) for t, qs in store.topics().items() for q in qs])
                    if k[0] == "NewTopic"} - set(expected)
        assert kept_new, "some NewTopic queue still holds messages"
        new_before = stored_messages(cluster, "NewTopic")

        if through == "admin":
            async def clean() -> list[tuple[str, int]]:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    return await admin.clean_expired_consume_queues(cluster.broker_addr)

            dropped = run(clean())
        else:
            out = cli("topic", "clean-expired-cq", "-n", cluster.namesrv_addr, "--json")
            assert out.returncode == 0, out.stderr
            dropped = [(d["topic"], d["queueId"]) for d in json.loads(out.stdout)[cluster.broker_addr]]

        assert dropped == expected
        after = topics(cluster)
        assert "OldTopic" not in after and not (store_dir / "consumequeue" / "OldTopic").exists()
        assert SCHEDULE_TOPIC in after, "the schedule topic's queues are never expired"
        assert {("NewTopic", q) for q in after.get("NewTopic", [])} == kept_new
        assert stored_messages(cluster, "NewTopic") == new_before, "the rest serve what they served"

        # an expired queue's offsets start over: a new message is entry 0
        run(send(cluster, "OldTopic", 4))
        assert sorted(m.queue_offset for m in wait_stored(cluster, "OldTopic", 4, "new old-topic messages")) \
            == [0, 0, 0, 0]
        assert cluster.call(store.clean_expired_consume_queues) == []
