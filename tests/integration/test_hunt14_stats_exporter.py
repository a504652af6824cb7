"""The exporter's rocketmq_send_back_nums against a real broker: rocketmq-exporter serves SNDBCK_PUT_NUMS'
last-minute sum (how many messages the group gave back in the last minute), not its rate as its other
``*_tps`` gauges."""

from __future__ import annotations

import time
from typing import Any

from local_cluster import LocalCluster, send_msg_back
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.exporter import collect, render
from rocketstore.remoting.transport import run

TOPIC = "SendBackExporterTopic"
GROUP = "send-back-exporter-group"
GIVEN_BACK = 3


def test_send_back_nums_is_the_minute_sum_of_messages_given_back(cluster: LocalCluster) -> None:
    async def send() -> Any:
        async with Producer(cluster.namesrv_addr, "send-back-exporter-producer") as producer:
            return await producer.send(TOPIC, b"again", queue_id=0)

    async def routed() -> bool:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return TOPIC in await admin.topic_list()

    sent = run(send())
    deadline = time.monotonic() + 30
    while not run(routed()):
        assert time.monotonic() < deadline, "no route for the topic after 30 s"
        time.sleep(0.1)
    cluster.wait_dispatched()  # in its consume queue before the pull (built a moment after the send)

    async def go() -> None:
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            result = await consumer.pull(sent.message_queue, 0)
            assert len(result.messages) == 1
            await consumer.commit_offset(sent.message_queue, result.next_begin_offset)
            await send_msg_back(cluster.broker_addr, sent, GROUP, TOPIC, ["0"] * GIVEN_BACK)

    run(go())
    cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, TOPIC, 0) == 1, 20, "the commit")
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    async def scrape() -> str:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return render(await collect(admin))

    found = [s.value for family in text_string_to_metric_families(run(scrape())) for s in family.samples
             if s.name == "rocketmq_send_back_nums" and s.labels.get("topic") == TOPIC
             and s.labels.get("group") == GROUP]
    assert found == [GIVEN_BACK]


def test_every_broker_runtime_metric_of_rocketmq_exporter_is_served(cluster: LocalCluster) -> None:
    """rocketmq-exporter serves 63 rocketmq_brokeruntime_* gauges from the runtime info: the put latency bands
    (pmdt_*, from putMessageDistributeTime once a minute has passed), the commitlog partition's capacity in
    bytes, the thread pool figures, dispatchMaxBuffer, remainTransientStoreBufferNumbs,
    startAcceptSendRequestTimeStamp, and putLatency99 / 999 (-1 when the broker has none, as 4.9.3's)."""
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "runtime-exporter-producer") as producer:
            for _ in range(3):
                assert (await producer.send(TOPIC, b"m", queue_id=0)).status == "SEND_OK"

    run(send())
    cluster.call(lambda: cluster.broker.stats.store.swap_bands())  # the minute of latency bands ends

    async def scrape() -> dict[str, float]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            text = render(await collect(admin))
        return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
                if s.name.startswith("rocketmq_brokeruntime_")}

    values = run(scrape())
    bands = ("0ms", "0to10ms", "10to50ms", "50to100ms", "100to200ms", "200to500ms", "500to1s", "1to2s", "2to3s",
             "3to4s", "4to5s", "5to10s", "10stomore")
    assert sum(values[f"rocketmq_brokeruntime_pmdt_{band}"] for band in bands) == 3
    info = cluster.call(lambda: cluster.broker.stats.store.runtime_info(0))
    assert values["rocketmq_brokeruntime_pmdt_0ms"] == float(info["putMessageDistributeTime"].split()[0].split(":")[1])
    assert values["rocketmq_brokeruntime_commitlogdir_capacity_total"] > values[
        "rocketmq_brokeruntime_commitlogdir_capacity_free"] > 0
    for name, value in (("send_threadpool_queue_size", 0), ("send_threadpoolqueue_capacity", 10000),
                        ("send_threadpoolqueue_headwait_timemills", 0), ("pull_threadpoolqueue_size", 0),
                        ("pull_threadpoolqueue_capacity", 100000), ("pull_threadpoolqueue_headwait_timemills", 0),
                        ("query_threadpoolqueue_size", 0), ("query_threadpool_queue_capacity", 20000),
                        ("query_threadpoolqueue_headwait_timemills", 0), ("dispatch_maxbuffer", 0),
                        ("remain_transientstore_buffer_numbs", 2**31 - 1), ("start_accept_sendrequest_time", 0),
                        ("put_latency_99", -1), ("put_latency_999", -1)):
        assert values[f"rocketmq_brokeruntime_{name}"] == value, name
    assert len(values) == 63  # the rates of windows without their samples yet too (0)


def test_rates_are_served_with_two_decimals_as_rocketmq_exporter(cluster: LocalCluster) -> None:
    """rocketmq-exporter serves the stat items' minute rates through Utils.getFixedDouble (DecimalFormat
    "#.##", half even): rocketmq_producer_tps of one message over 13 s is 0.08, not 0.0769..., and a rate
    under 0.005 per second is 0."""
    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "rates-exporter-producer") as producer:
            assert (await producer.send(TOPIC, b"m", queue_id=0)).status == "SEND_OK"

    run(send())
    now_ms = int(time.time() * 1000)
    cluster.call(lambda: cluster.broker.stats.sample_windows(now_ms))
    cluster.call(lambda: cluster.broker.stats.sample_windows(now_ms + 3000))  # a window of 13 s

    async def figures() -> tuple[float, list[float], float]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            before = (await admin.view_stats(cluster.broker_addr, "TOPIC_PUT_NUMS", TOPIC)).minute.tps
            text = render(await collect(admin))
            after = (await admin.view_stats(cluster.broker_addr, "TOPIC_PUT_NUMS", TOPIC)).minute.tps
        served = [s.value for family in text_string_to_metric_families(text) for s in family.samples
                  if s.name == "rocketmq_producer_tps" and s.labels.get("topic") == TOPIC]
        return before, served, after

    for _ in range(3):  # the broker's own 10 s snapshot may fall between the calls: then ask again
        before, served, after = run(figures())
        if before == after:
            break
    assert before == after and round(before, 2) != before
    assert served == [round(before, 2)]
