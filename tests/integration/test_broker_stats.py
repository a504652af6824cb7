"""Broker statistics and configuration through AdminClient against a real broker and name server:
GET_BROKER_RUNTIME_INFO (28), VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317), GET_BROKER_CONFIG (26)
and UPDATE_BROKER_CONFIG (25), with their refusals."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, send_msg_back

from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient, BrokerConsumeStats, BrokerStatsData
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.transport import run

TOPIC = "StatsTopic"
GROUP = "stats-group"
COUNT = 12
#: a rate string of 4.9.3: three Double.toString numbers (a window without enough samples is blank)
RATES = re.compile(r"^(\d+\.\d+(E-?\d+)?)? (\d+\.\d+(E-?\d+)?)? (\d+\.\d+(E-?\d+)?)?$")


def wait_routed(cluster: LocalCluster, topic: str) -> None:
    """Poll until the name server has the route of *topic* (a topic a send creates is registered soon after)."""
    async def known() -> bool:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return topic in await admin.topic_list()

    deadline = time.monotonic() + 30
    while not run(known()):
        assert time.monotonic() < deadline, f"no route for {topic} after 30 s"
        time.sleep(0.1)


def send_and_pull(cluster: LocalCluster, count: int = COUNT) -> int:
    """Send *count* messages to TOPIC (one queue), pull them all as GROUP and commit; the bytes stored."""
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "stats-producer") as producer:
            for i in range(count):
                result = await producer.send(TOPIC, f"message {i}".encode(), tags="T", queue_id=0)
                assert result.status == "SEND_OK"

    run(go())
    cluster.wait_dispatched()
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == count, 20, "every message in queue 0")
    wait_routed(cluster, TOPIC)

    async def pull() -> None:
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            [mq] = [q for q in await consumer.queues(TOPIC) if q.queue_id == 0]
            offset = 0
            while offset < count:
                result = await consumer.pull(mq, offset, 5)
                assert result.messages, f"nothing found at offset {offset}"
                offset = result.next_begin_offset
            await consumer.commit_offset(mq, offset)

    run(pull())
    cluster.wait_until(lambda: cluster.broker.offsets.query(GROUP, TOPIC, 0) == count, 20, "the committed offset")
    return cluster.call(lambda: cluster.broker.store.max_commit_log_offset)


def admin_call(cluster: LocalCluster, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await fn(admin)

    return run(go())


def test_runtime_info_counts_what_was_sent_and_pulled_in_4_9_3_formats(cluster: LocalCluster) -> None:
    stored_bytes = send_and_pull(cluster)
    info = admin_call(cluster, lambda a: a.runtime_info(cluster.broker_addr))
    assert info["msgPutTotalTodayNow"] == info["putMessageTimesTotal"] == str(COUNT)
    assert info["msgGetTotalTodayNow"] == str(COUNT)
    assert info["putMessageSizeTotal"] == str(stored_bytes) == info["commitLogMaxOffset"]
    assert float(info["putMessageAverageSize"]) == pytest.approx(stored_bytes / COUNT)
    assert info["putMessageFailedTimes"] == "0"
    for key in ("putTps", "getFoundTps", "getMissTps", "getTransferedTps", "getTotalTps"):
        assert RATES.match(info[key]), (key, info[key])
    assert re.match(r"^\[ 0 days, 0 hours, \d+ minutes, \d+ seconds \]$", info["runtime"])
    assert info["putMessageDistributeTime"] == "null"  # no finished minute yet, as 4.9.3 answers
    assert int(info["putMessageEntireTimeMax"]) >= 0 and int(info["getMessageEntireTimeMax"]) >= 0
    assert re.match(r"^\d+(\.\d+ [KMGTPE]i)? ?B$", info["remainHowManyDataToFlush"])
    ratio = float(info["commitLogDiskRatio"])
    assert 0.0 < ratio <= 1.0 and float(info["consumeQueueDiskRatio"]) == ratio  # one partition in the test
    assert re.match(r"^Total : .+B, Free : .+B\.$", info["commitLogDirCapacity"])
    for key in ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgGetTotalTodayMorning"):
        assert info[key] == "0"  # no midnight has passed since the broker started
    assert info["brokerVersionDesc"] == "V4_9_3" and info["bootTimestamp"] == str(cluster.broker.start_time_ms)


def test_the_samplers_own_ticks_fill_the_windows_and_rates(cluster: LocalCluster) -> None:
    """No sampling forced: the broker's sampler takes the 10 s snapshot and the 1 s samples by itself."""
    send_and_pull(cluster)

    def minute_sum() -> int:
        try:
            data: BrokerStatsData = admin_call(cluster, lambda a: a.view_stats(cluster.broker_addr, "TOPIC_PUT_NUMS",
                                                                                 TOPIC))
        except BrokerError:
            return 0
        return data.minute.sum

    deadline = time.monotonic() + 40
    while minute_sum() != COUNT:
        assert time.monotonic() < deadline, "no 10 s snapshot of TOPIC_PUT_NUMS within 40 s"
        time.sleep(0.5)
    while not admin_call(cluster, lambda a: a.runtime_info(cluster.broker_addr))["putTps"].split(" ")[0]:
        assert time.monotonic() < deadline, "no 10 s put rate within 40 s"
        time.sleep(0.5)
    rates = admin_call(cluster, lambda a: a.runtime_info(cluster.broker_addr))["putTps"].split(" ")
    assert float(rates[0]) >= 0.0


def test_view_stats_shows_the_items_of_sends_and_pulls(cluster: LocalCluster) -> None:
    stored_bytes = send_and_pull(cluster)
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    def view(name: str, key: str) -> BrokerStatsData:
        return admin_call(cluster, lambda a: a.view_stats(cluster.broker_addr, name, key))  # type: ignore[no-any-return]

    nums = view("TOPIC_PUT_NUMS", TOPIC)
    assert (nums.minute.sum, nums.hour.sum, nums.day.sum) == (COUNT, COUNT, COUNT)
    assert nums.minute.avgpt == pytest.approx(1.0)  # one message a send request
    assert 0 < nums.minute.tps <= COUNT / 10  # over at least the 10 s since the item's zero snapshot
    assert view("TOPIC_PUT_SIZE", TOPIC).minute.sum == stored_bytes
    assert view("BROKER_PUT_NUMS", "DefaultCluster").minute.sum == COUNT
    got = view("GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")
    assert got.minute.sum == COUNT and got.minute.avgpt == pytest.approx(COUNT / 3)  # three pulls of 5, 5, 2
    assert view("GROUP_GET_SIZE", f"{TOPIC}@{GROUP}").minute.sum == stored_bytes
    assert view("BROKER_GET_NUMS", "DefaultCluster").minute.sum == COUNT
    assert view("GROUP_GET_LATENCY", f"0@{TOPIC}@{GROUP}").minute.sum >= 0  # queueId@topic@group

    for name, key in (("NO_SUCH_STATS", TOPIC), ("TOPIC_PUT_NUMS", "NoSuchTopic"),
                      ("GROUP_GET_FROM_DISK_NUMS", f"{TOPIC}@{GROUP}")):
        with pytest.raises(BrokerError, match=f"The stats <{name}> <{key}> not exist"):
            view(name, key)


def test_messages_given_back_count_per_topic_and_group(cluster: LocalCluster) -> None:
    """CONSUMER_SEND_MSG_BACK: SNDBCK_PUT_NUMS under <consumed topic>@<group>; a retry stored for later is also
    a put of SCHEDULE_TOPIC_XXXX (a dead letter is not)."""
    async def send() -> Any:
        async with Producer(cluster.namesrv_addr, "sb-producer") as producer:
            return await producer.send(TOPIC, b"again", queue_id=0)

    sent = run(send())
    wait_routed(cluster, TOPIC)
    cluster.wait_dispatched()  # the pull below does not wait: the record must be in its queue (send_and_pull too)

    async def go() -> None:
        async with PullConsumer(cluster.namesrv_addr, GROUP) as consumer:
            assert len((await consumer.pull(sent.message_queue, 0)).messages) == 1  # the group exists from here on
            # a retry later, then a dead letter
            await send_msg_back(cluster.broker_addr, sent, GROUP, TOPIC, ["0", "-1"])

    run(go())
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))

    def view(name: str, key: str) -> BrokerStatsData:
        return admin_call(cluster, lambda a: a.view_stats(cluster.broker_addr, name, key))  # type: ignore[no-any-return]

    assert view("SNDBCK_PUT_NUMS", f"{TOPIC}@{GROUP}").minute.sum == 2
    assert view("TOPIC_PUT_NUMS", "SCHEDULE_TOPIC_XXXX").minute.sum == 1
    assert view("TOPIC_PUT_NUMS", TOPIC).minute.sum == 1  # the send; the given-back copies are not sends
    with pytest.raises(BrokerError, match="not exist"):
        view("TOPIC_PUT_NUMS", f"%DLQ%{GROUP}")
    info = admin_call(cluster, lambda a: a.runtime_info(cluster.broker_addr))
    assert info["msgPutTotalTodayNow"] == "3"  # every put the store made: the send and the two copies


def test_broker_consume_stats_lists_every_group_with_its_lag(cluster: LocalCluster) -> None:
    send_and_pull(cluster)

    async def more() -> None:
        async with Producer(cluster.namesrv_addr, "stats-producer") as producer:
            for i in range(3):
                await producer.send(TOPIC, f"late {i}".encode(), queue_id=0)

    run(more())
    cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == COUNT + 3, 20, "the three late ones")
    # consumeTps is GROUP_GET_NUMS' last-minute tps (4.9.3's tpsGroupGetNums): there from its next snapshot
    cluster.call(lambda: cluster.broker.stats.sample_windows(int(time.time() * 1000)))
    answer: BrokerConsumeStats = admin_call(cluster, lambda a: a.broker_consume_stats(cluster.broker_addr))
    assert answer.broker_addr == cluster.broker_addr
    assert answer.total_diff == 3
    [progress] = answer.groups[GROUP]
    write_queues = cluster.call(lambda: cluster.broker.topics.get(TOPIC).write_queue_nums)  # type: ignore[union-attr]
    assert [q.queue_id for q in progress.queues] == list(range(write_queues))
    queue0 = progress.queues[0]
    assert (queue0.topic, queue0.broker_offset, queue0.consumer_offset, queue0.lag) == (TOPIC, COUNT + 3, COUNT, 3)
    assert queue0.last_timestamp_ms > 0
    assert progress.consume_tps > 0  # handed out within the last minute
    assert answer.groups["TOOLS_CONSUMER"] == []  # a group without offsets is listed with no topic
    ordered: BrokerConsumeStats = admin_call(cluster, lambda a: a.broker_consume_stats(cluster.broker_addr, True))
    assert ordered.groups[GROUP] == [] and ordered.total_diff == 0  # StatsTopic is not ordered


def test_a_config_update_shows_in_get_config_is_written_and_bumps_the_versions(cluster: LocalCluster) -> None:
    admin_call(cluster, lambda a: a.create_topic(TOPIC, broker_addr=cluster.broker_addr, read_queue_nums=2,
                                                 write_queue_nums=2))
    # the broker registers the new topic with the name server in the background: wait for its route
    cluster.wait_until(lambda: cluster.namesrv.routes.route(TOPIC) is not None, 20, "the topic's route")
    assert admin_call(cluster, lambda a: a.route(TOPIC)).queue_datas[0].perm == 6
    before, version_before = admin_call(cluster, lambda a: a.broker_config(cluster.broker_addr))
    assert before["brokerPermission"] == "6" and before["flushIntervalCommitLog"] == "500"
    topics_version = cluster.call(lambda: cluster.broker.topics.data_version)
    updated = admin_call(cluster, lambda a: a.update_broker_config(
        {"brokerPermission": "4", "flushIntervalCommitLog": "700", "longPollingEnable": "false"}))
    assert updated == [cluster.broker_addr]  # every master: the one there is
    after, version_after = admin_call(cluster, lambda a: a.broker_config(cluster.broker_addr))
    assert (after["brokerPermission"], after["flushIntervalCommitLog"], after["longPollingEnable"]) == \
        ("4", "700", "false")
    assert version_after.counter == version_before.counter + 1
    assert cluster.call(lambda: cluster.broker.topics.data_version).counter == topics_version.counter + 1
    assert cluster.call(lambda: cluster.broker.config.long_polling_enable) is False
    written = (Path(cluster.store_dir) / "config" / "broker.properties").read_text(encoding="utf-8").splitlines()
    assert {"brokerPermission=4", "flushIntervalCommitLog=700", "longPollingEnable=false"} <= set(written)
    # the broker registers its new permission with the name server at once: the route says read-only
    deadline = time.monotonic() + 20
    while admin_call(cluster, lambda a: a.route(TOPIC)).queue_datas[0].perm != 4:
        assert time.monotonic() < deadline, "the route still says writable after 20 s"
        time.sleep(0.2)


def test_bad_config_updates_are_refused_and_change_nothing(cluster: LocalCluster) -> None:
    # values the config refuses (4.9.3 takes them and then cannot start again from the file it wrote);
    # unknown keys and values that do not convert are left as they were, as 4.9.3 leaves them:
    # tests/integration/test_hunt15_admin_config_update.py
    before, version = admin_call(cluster, lambda a: a.broker_config(cluster.broker_addr))
    for props, why in [({"brokerPermission": "4", "listenPort": "70000"}, "listenPort 70000 out of range"),
                       ({"brokerName": ""}, "brokerName must not be empty"),
                       ({"mappedFileSizeCommitLog": "100"}, "at least 4096 bytes")]:
        with pytest.raises(BrokerError, match=why):
            admin_call(cluster, lambda a, p=props: a.update_broker_config(p, broker_addr=cluster.broker_addr))
    after, version_after = admin_call(cluster, lambda a: a.broker_config(cluster.broker_addr))
    assert after == before and version_after == version
    assert not (Path(cluster.store_dir) / "config" / "broker.properties").exists()
