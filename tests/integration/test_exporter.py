"""The Prometheus exporter against a real name server and broker: what it reports is checked against the
broker's own state, and its text is read back with Prometheus's own Python parser (prometheus_client)."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families
from serve_process import cli

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import MetricsServer, collect, render
from rocketstore.remoting.transport import run

TOPIC = "ExporterTopic"
GROUP = "exporter-group"
SENT, CONSUMED = 10, 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("exporter") / "store") as cluster:
        cluster.create_topic(TOPIC, queues=2)

        async def send_and_consume() -> None:
            async with Producer(cluster.namesrv_addr, "exporter-producer") as producer:
                for i in range(SENT):
                    assert (await producer.send(TOPIC, f"m{i}".encode(), queue_id=0)).status == "SEND_OK"
            async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
                mq = next(q for q in await consumer.queues(TOPIC) if q.queue_id == 0)
                result = await consumer.pull(mq, 0, CONSUMED)
                assert len(result.messages) == CONSUMED
                await consumer.commit_offset(mq, result.next_begin_offset)

        run(send_and_consume())
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
