"""The Prometheus exporter against a real name server and broker: what it reports is checked against the
broker's own state, and its text is read back with Prometheus's own Python parser (prometheus_client)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families
from serve_process import cli

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PullConsumer,
    PushConsumer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import MetricsServer, collect, render
from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole, StoreConfig

TOPIC = "ExporterTopic"
GROUP = "exporter-group"
SENT, CONSUMED = 10, 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("exporter") / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "exporter-producer") as producer:
                for i in range(SENT):
                    assert (await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)).status == "SEND_OK"

        async def consume() -> None:
            async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
                mq = next(q for q in await consumer.queues(TOPIC) if q.queue_id == 0)
                result = await consumer.pull(mq, 0, CONSUMED)
                assert len(result.messages) == CONSUMED
                await consumer.commit_offset(mq, result.next_begin_offset)

        run(send())
        cluster.wait_dispatched()  # (a pull at once could find the queue's entries not all written yet)
        run(consume())
        cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, TOPIC, 0) == CONSUMED, 20, "the commit")
        cluster.wait_dispatched()
        cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))
        yield cluster


def _scrape(cluster: LocalCluster) -> tuple[dict[tuple[str, frozenset[tuple[str, str]]], float], int, int]:
    """One collection, parsed back from its text: (name, labels) -> value, and the wall-clock ms around it."""
    async def go() -> str:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return render(await collect(admin))

    before = int(time.time() * 1000)
    text = run(go())
    after = int(time.time() * 1000)
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return values, before, after


def _one(values: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    found = [v for (n, ls), v in values.items() if n == name and set(labels.items()) <= ls]
    assert len(found) == 1, (name, labels, sorted(k for k in values if k[0] == name))
    return found[0]


def test_offsets_lag_and_latency_match_the_broker(cluster: LocalCluster) -> None:
    values, before, after = _scrape(cluster)
    where = {"cluster": "DefaultCluster", "broker": "broker-a"}
    assert _one(values, "rocketmq_producer_offset", topic=TOPIC, **where) == SENT
    assert _one(values, "rocketmq_consumer_offset", topic=TOPIC, group=GROUP, **where) == CONSUMED
    assert _one(values, "rocketmq_group_diff", topic=TOPIC, group=GROUP, msgModel="1",
                countOfOnlineConsumers="0") == SENT - CONSUMED
    # the first message not consumed is the one at offset CONSUMED: the latency is the time since its store
    stored = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, CONSUMED, 1)).messages[0]
    latency = _one(values, "rocketmq_group_get_latency_by_storetime", topic=TOPIC, group=GROUP, **where)
    assert before - stored.store_timestamp <= latency <= after - stored.store_timestamp
    assert _one(values, "rocketmq_brokeruntime_commitlog_maxoffset", cluster="DefaultCluster",
                brokerHost="broker-a") == cluster.call(lambda: cluster.broker.store.max_commit_log_offset)
    assert _one(values, "rocketmq_brokeruntime_msg_put_total_today_now", brokerHost="broker-a") == SENT
    for name in ("rocketmq_broker_tps", "rocketmq_broker_qps"):
        assert _one(values, name, cluster="DefaultCluster", broker="broker-a", brokerIP="127.0.0.1") >= 0
    assert _one(values, "rocketmq_producer_tps", topic=TOPIC, **where) >= 0
    assert _one(values, "rocketmq_consumer_tps", topic=TOPIC, group=GROUP, **where) >= 0
    assert _one(values, "rocketstore_exporter_scrape_errors") == 0


def test_a_caught_up_group_has_no_lag_and_no_latency(cluster: LocalCluster) -> None:
    group = "exporter-caught-up"

    async def consume_all() -> None:
        async with PullConsumer(cluster.namesrv_addr, group) as consumer:
            mq = next(q for q in await consumer.queues(TOPIC) if q.queue_id == 0)
            result = await consumer.pull(mq, 0, 32)
            await consumer.commit_offset(mq, result.next_begin_offset)

    run(consume_all())
    cluster.wait_until(lambda: cluster.broker.offsets.query(group, TOPIC, 0) == SENT, 20, "the commit")
    values, _, _ = _scrape(cluster)
    assert _one(values, "rocketmq_group_diff", topic=TOPIC, group=group) == 0
    assert _one(values, "rocketmq_group_get_latency_by_storetime", topic=TOPIC, group=group) == 0


def test_online_clients_are_counted_and_report_their_own_figures(cluster: LocalCluster) -> None:
    """A push consumer online in its group: rocketmq_group_count names it, and the rocketmq_client_*
    figures are what it reports about itself when asked through the broker (one message failed once)."""
    group = "exporter-push"
    seen: set[bytes] = set()
    failed: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        body = messages[0].body
        if body == b"m3" and not failed:
            failed.append(body)
            return ConsumeStatus.RECONSUME_LATER
        seen.add(body)
        return ConsumeStatus.CONSUME_SUCCESS

    async def start() -> PushConsumer:
        consumer = PushConsumer(cluster.namesrv_addr, group, {TOPIC: "*"}, handle,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                heartbeat_interval_s=0.5, rebalance_interval_s=0.5, persist_interval_s=0.2)
        await consumer.start()
        return consumer

    consumer = cluster.run(start())
    try:
        cluster.wait_until(lambda: len(seen) == SENT and cluster.broker.offsets.query(group, TOPIC, 0) == SENT,
                           30, "the push consumer to consume and commit every message")
        values, _, _ = _scrape(cluster)
        assert _one(values, "rocketmq_group_count", group=group, localaddr=consumer.client_id) == 1
        caddr = next(ls for (n, ls), _ in values.items() if n == "rocketmq_group_count" and ("group", group) in ls)
        assert dict(caddr)["caddr"].startswith("127.0.0.1:")
        assert _one(values, "rocketmq_group_diff", group=group, topic=TOPIC, countOfOnlineConsumers="1") == 0
        client = {"group": group, "topic": TOPIC, "clientId": consumer.client_id, "clientAddr": dict(caddr)["caddr"]}
        own = consumer.running_info().status_table[TOPIC]
        assert _one(values, "rocketmq_client_consume_fail_msg_count", **client) == own.consume_failed_msgs == 1
        assert _one(values, "rocketmq_client_consume_ok_msg_tps", **client) > 0
        assert _one(values, "rocketmq_client_consumer_pull_tps", **client) > 0
        for name in ("rocketmq_client_consume_fail_msg_tps", "rocketmq_client_consume_rt",
                     "rocketmq_client_consumer_pull_rt"):
            assert _one(values, name, **client) >= 0
        assert _one(values, "rocketstore_exporter_scrape_errors") == 0
    finally:
        cluster.run(consumer.shutdown())
    # offline: still counted, as 0 clients
    values, _, _ = _scrape(cluster)
    assert _one(values, "rocketmq_group_count", group=group, caddr="", localaddr="") == 0
    assert not [k for k in values if k[0].startswith("rocketmq_client_") and ("group", group) in k[1]]


def test_a_group_online_before_its_first_commit_is_counted(cluster: LocalCluster) -> None:
    """A group whose consumer is online but has committed nothing (an empty topic) holds no offsets on any
    broker: it is found as rocketmq-exporter finds it, by who consumes each topic."""
    group, topic = "exporter-idle", "ExporterIdleTopic"
    cluster.create_topic(topic)

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    async def start() -> PushConsumer:
        consumer = PushConsumer(cluster.namesrv_addr, group, {topic: "*"}, handle, heartbeat_interval_s=0.5)
        await consumer.start()
        return consumer

    consumer = cluster.run(start())
    try:
        cluster.wait_until(lambda: cluster.broker.clients.groups_subscribing(topic), 20, "the consumer's heartbeat")
        assert not cluster.call(lambda: cluster.broker.offsets.groups_of_topic(topic))
        values, _, _ = _scrape(cluster)
        assert _one(values, "rocketmq_group_count", group=group, localaddr=consumer.client_id) == 1
    finally:
        cluster.run(consumer.shutdown())


def test_commitlog_diff_is_how_far_each_slave_is_behind(tmp_path: Path) -> None:
    """Two slaves of one master: one replicating (caught up: 0), one whose HA master address leads nowhere
    (it registers but has nothing: the master's whole commitlog)."""
    with LocalCluster(tmp_path / "master", ha_listen_port=0) as master:
        master.create_topic(TOPIC)

        async def send() -> None:
            async with Producer(master.namesrv_addr, "exporter-ha-producer") as producer:
                for i in range(5):
                    assert (await producer.send(TOPIC, b"x" * 100 + str(i).encode())).status == "SEND_OK"

        master.run(send())
        slaves: list[Broker] = []
        for broker_id, ha in ((1, ""), (2, "127.0.0.1:1")):
            config = BrokerConfig(broker_name=master.broker_name, broker_id=broker_id, namesrv_addr=master.namesrv_addr,
                                  listen_port=0, listen_host="127.0.0.1", broker_ip1="127.0.0.1", ha_master_address=ha)
            store = StoreConfig(store_path_root_dir=str(tmp_path / f"slave{broker_id}"), broker_role=BrokerRole.SLAVE)
            slaves.append(Broker(config, store))
            master.run(slaves[-1].start())
        try:
            end = master.call(lambda: master.broker.store.max_commit_log_offset)
            master.wait_until(lambda: slaves[0].store.max_commit_log_offset == end, 30, "the first slave to catch up")

            async def registered() -> int:
                async with AdminClient(master.namesrv_addr) as admin:
                    return len((await admin.cluster_info()).brokers[master.broker_name].broker_addrs)

            deadline = time.monotonic() + 30
            while run(registered()) != 3:
                assert time.monotonic() < deadline, "both slaves did not register with the name server"
                time.sleep(0.1)
            values, _, _ = _scrape(master)
            where = {"cluster": "DefaultCluster", "broker": master.broker_name}
            assert _one(values, "rocketmq_broker_commitlog_diff", brokerIP=slaves[0].address, **where) == 0
            assert _one(values, "rocketmq_broker_commitlog_diff", brokerIP=slaves[1].address, **where) == end
            assert not [k for k in values if k[0] == "rocketmq_broker_commitlog_diff" and
                        ("brokerIP", master.broker_addr) in k[1]]
        finally:
            for slave in slaves:
                master.run(slave.close())


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_http_endpoint_serves_the_text_format(cluster: LocalCluster) -> None:
    async def start() -> tuple[AdminClient, MetricsServer]:
        admin = AdminClient(cluster.namesrv_addr)
        server = MetricsServer(admin, host="127.0.0.1", port=0, min_interval_s=60)
        await server.start()
        return admin, server

    admin, server = cluster.run(start())
    try:
        base = f"http://127.0.0.1:{server.port}"
        status, content_type, text = _get(base + "/metrics")
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        names = {family.name for family in text_string_to_metric_families(text)}
        assert {"rocketmq_producer_offset", "rocketmq_group_diff", "rocketmq_broker_tps"} <= names
        # within min_interval_s a scrape gets the same collection back, not a new one
        assert _get(base + "/metrics")[2] == text
        assert _get(base + "/nothing")[0] == 404
    finally:
        async def stop() -> None:
            await server.close()
            await admin.close()

        cluster.run(stop())


def test_unreachable_name_server_is_a_503_with_the_reason() -> None:
    async def scrape() -> tuple[int, str]:
        async with AdminClient("127.0.0.1:1", timeout_s=2) as admin, \
                MetricsServer(admin, host="127.0.0.1", port=0) as server:
            return await _in_thread(f"http://127.0.0.1:{server.port}/metrics")

    status, text = run(scrape())
    assert status == 503 and "could not be read" in text


async def _in_thread(url: str) -> tuple[int, str]:
    status, _, text = await asyncio.to_thread(_get, url)
    return status, text


def test_exporter_command_prints_one_collection_and_checks_its_port(cluster: LocalCluster) -> None:
    out = cli("exporter", "--once", "-n", cluster.namesrv_addr)
    assert out.returncode == 0, out.stderr
    offsets = {tuple(sorted(s.labels.items())): s.value for family in text_string_to_metric_families(out.stdout)
               for s in family.samples if s.name == "rocketmq_producer_offset"}
    assert offsets[(("broker", "broker-a"), ("cluster", "DefaultCluster"), ("topic", TOPIC))] == SENT
    refused = cli("exporter", "--port", "99999", "-n", cluster.namesrv_addr)
    assert refused.returncode == 2 and "65535" in refused.stderr
    as_json = cli("exporter", "--once", "--json", "-n", cluster.namesrv_addr)
    assert as_json.returncode == 0, as_json.stderr
    found = [s["value"] for s in json.loads(as_json.stdout) if s["name"] == "rocketmq_producer_offset"
             and s["labels"] == {"cluster": "DefaultCluster", "broker": "broker-a", "topic": TOPIC}]
    assert found == [SENT]
    refused = cli("exporter", "--json", "--port", "0", "-n", cluster.namesrv_addr)
    assert refused.returncode == 2 and "--once" in refused.stderr
