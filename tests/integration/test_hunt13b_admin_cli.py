"""Admin commands compared with 4.9.3's mqadmin commands of the same job, run in process (``main([...])``)
against an in-process name server + broker: what they change on the name servers and brokers."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from cli_calls import ok, ok_json, refused
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def kv(cluster: LocalCluster, namespace: str, key: str) -> str | None:
    async def get() -> str | None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.get_kv(namespace, key)

    return run(get())


def test_an_ordered_topic_created_on_one_broker_merges_its_order_config_on_the_name_servers(
        capsys: pytest.CaptureFixture[str], cluster: LocalCluster) -> None:
    # mqadmin updateTopic -b ADDR -o true: createOrUpdateOrderConf(topic, "brokerName:w", isCluster=false)
    # merges this broker's entry into the value the name servers hold; the other brokers' entries stay
    ok(capsys, cluster, "kv", "put", "ORDER_TOPIC_CONFIG", "OrderedOnOne", "broker-other:5")
    ok(capsys, cluster, "topic", "create", "OrderedOnOne", "-b", cluster.broker_addr, "-o", "-w", "2", "-r", "2")
    assert kv(cluster, "ORDER_TOPIC_CONFIG", "OrderedOnOne") == "broker-other:5;broker-a:2"

    ok(capsys, cluster, "topic", "create", "OrderedOnOne", "-b", cluster.broker_addr, "-o", "-w", "3", "-r", "3")
    assert kv(cluster, "ORDER_TOPIC_CONFIG", "OrderedOnOne") == "broker-other:5;broker-a:3"

    ok(capsys, cluster, "topic", "create", "FreshOrdered", "-b", cluster.broker_addr, "-o", "-w", "4", "-r", "4")
    assert kv(cluster, "ORDER_TOPIC_CONFIG", "FreshOrdered") == "broker-a:4"


def test_reset_offset_takes_mqadmins_now_and_its_date_form(capsys: pytest.CaptureFixture[str],
                                                           cluster: LocalCluster) -> None:
    # mqadmin resetOffsetByTime -s takes "now" (sent as -1: each queue's max offset) and yyyy-MM-dd#HH:mm:ss:SSS
    topic, group = "ResetFormsTopic", "reset-forms-group"
    cluster.create_topic(topic, queues=2)
    ok(capsys, cluster, "send", topic, "m{i}", "--count", "6")
    cluster.wait_dispatched()
    for q in range(2):
        cluster.call(lambda q=q: cluster.broker.offsets.commit(group, topic, q, 1))
    ends = cluster.call(lambda: {q: cluster.broker.store.max_offset(topic, q) for q in range(2)})
    assert sum(ends.values()) == 6

    table = ok_json(capsys, cluster, "group", "reset-offset", group, "-t", topic, "--to", "now")
    assert {r["queueId"]: r["offset"] for r in table} == ends
    assert cluster.call(lambda: {q: cluster.broker.offsets.query(group, topic, q) for q in range(2)}) == ends

    long_ago = datetime(2001, 2, 3, 4, 5, 6).strftime("%Y-%m-%d#%H:%M:%S:000")
    table = ok_json(capsys, cluster, "group", "reset-offset", group, "-t", topic, "--to", long_ago)
    assert {r["queueId"]: r["offset"] for r in table} == {0: 0, 1: 0}
    assert cluster.call(lambda: {q: cluster.broker.offsets.query(group, topic, q) for q in range(2)}) == {0: 0, 1: 0}


def test_group_update_on_an_unknown_cluster_names_the_cluster(capsys: pytest.CaptureFixture[str],
                                                              cluster: LocalCluster) -> None:
    # as topic create -c and every other -c command say it, not "no master broker is registered"
    err = refused(capsys, cluster, "group", "update", "some-group", "-c", "NoSuchCluster")
    assert "cluster 'NoSuchCluster' is not known to the name server (known: DefaultCluster)" in err


def test_print_queue_from_an_offset_retention_deleted_prints_the_messages_still_kept(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    with LocalCluster(store_dir, store_overrides={"mapped_file_size_commit_log": 64 << 10}) as cluster:
        cluster.create_topic("GoneTopic")
        cluster.create_topic("KeptTopic")

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "retention-producer") as producer:
                for topic, count in (("GoneTopic", 20), ("KeptTopic", 200)):
                    for i in range(count):
                        await producer.send(topic, f"{topic}-{i}".encode().ljust(1000, b"."))

        run(send())
        cluster.wait_dispatched()
        # every commitlog segment but the newest one is 100 hours old: retention deletes them
        past = time.time() - 100 * 3600
        for f in sorted((store_dir / "commitlog").iterdir())[:-1]:
            os.utime(f, (past, past))
        store = cluster.broker.store
        assert cluster.call(lambda: store.delete_expired_files(force=True)).commit_log_files_deleted > 0
        first_kept = cluster.call(lambda: store.min_offset("KeptTopic", 0))
        assert 0 < first_kept < 200

        # mqadmin printMsgByQueue walks from the offset asked; one retention deleted must not end the walk
        # before the messages of the range that are still there
        got = ok_json(capsys, cluster, "message", "print-queue", "-t", "KeptTopic", "-b", "broker-a", "-i", "0",
                      "--begin-offset", "0", "--end-offset", "200")
        assert [m["queueOffset"] for m in got["messages"]] == list(range(first_kept, 200))

        # a queue retention emptied is said to be empty, not to hold "offsets 20 .. 19"
        err = refused(capsys, cluster, "message", "by-offset", "-t", "GoneTopic", "-b", "broker-a", "-i", "0",
                      "-o", "0")
        assert "it holds no message; the next one stored gets offset 20" in err


def test_group_update_on_one_broker_can_forbid_broadcasting(capsys: pytest.CaptureFixture[str],
                                                            cluster: LocalCluster) -> None:
    # mqadmin updateSubGroup -b ADDR -d false: the group's config on that broker says consumeBroadcastEnable false
    out = ok(capsys, cluster, "group", "update", "no-broadcast-group", "-b", cluster.broker_addr,
             "--disable-broadcast", "--retry-max-times", "3")
    assert out == (f"updated group no-broadcast-group on {cluster.broker_addr}: retryMaxTimes 3, retryQueueNums 1, "
                   "broadcasting disabled\n")
    config = cluster.call(lambda: cluster.broker.groups.table["no-broadcast-group"])
    assert (config.consume_broadcast_enable, config.consume_enable, config.retry_max_times) == (False, True, 3)


def test_consume_from_a_topic_whose_brokers_forbid_reads_is_an_error_not_zero_messages(
        capsys: pytest.CaptureFixture[str], cluster: LocalCluster) -> None:
    topic = "WriteOnlyTopic"
    cluster.create_topic(topic, queues=2)
    ok(capsys, cluster, "send", topic, "m{i}", "--count", "3")
    ok(capsys, cluster, "topic", "perm", topic, "-p", "2")
    cluster.wait_until(lambda: [q.perm for q in cluster.namesrv.routes.route(topic).queue_datas] == [2], 10,
                       "the write-only perm in the route")
    # the backlog is there, but no queue may be read: say so (Java's fetchSubscribeMessageQueues fails too)
    err = refused(capsys, cluster, "consume", topic, "-g", "write-only-group", "--timeout", "1")
    assert "topic 'WriteOnlyTopic' has no readable queue" in err
