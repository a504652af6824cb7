"""SQL92 filtering of retry topics (4.9.3's ``filterSupportRetry``): with it off, a group's ``%RETRY%<group>``
pull hands out every message given back, whatever the group's SQL92 subscription; with it on, each retry
message must also pass the group's current SQL92 subscription of the topic it came from (the RETRY_TOPIC
property), evaluated on the retry message's own properties.

Two ways the difference shows: an expression over a property a retry adds (RETRY_TOPIC), with rocketstore's
PushConsumer returning RECONSUME_LATER once; and a subscription that changed while the given-back messages
waited, with raw heartbeats and pulls (as a Java consumer pulls: no subscription in the request), where a TAG
subscription, no subscription and an expression that does not compile let every retry through.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, wait_stored
from serve_process import wait_for

from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.pull import retry_matcher
from rocketstore.client import (
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageQueue,
    MessageSelector,
    Producer,
    PullConsumer,
    PushConsumer,
    decode_messages,
    group_requests,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.send_back import send_back
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData, build_subscription
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import PullMessageRequestHeader
from rocketstore.remoting.transport import ConnectionPool, run

#: every delay level 1 s, so given-back messages come back quickly
FAST_DELAYS = {"message_delay_level": " ".join(["1s"] * 18)}
FAST: dict[str, Any] = {"heartbeat_interval_s": 0.5, "rebalance_interval_s": 0.5, "persist_interval_s": 0.2,
                        "route_refresh_interval_s": 0.5, "long_poll_ms": 1000, "pull_delay_on_error_s": 0.2}
#: every first delivery, and the retries of high-priority messages only: a retry carries RETRY_TOPIC
RETRY_SQL = "RETRY_TOPIC IS NULL OR priority = 'high'"
COUNT = 12


def priority(i: int) -> str:
    return "high" if i % 3 == 0 else "low"


def make_cluster(tmp_path: Path, filter_support_retry: bool) -> LocalCluster:
    return LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS, enable_property_filter=True,
                        filter_support_retry=filter_support_retry)


def retry_ends(cluster: LocalCluster, group: str) -> int:
    return cluster.call(lambda: cluster.broker.store.max_offset(f"%RETRY%{group}", 0))


def test_filter_support_retry_is_read_from_broker_conf_and_off_by_default() -> None:
    assert BrokerConfig().filter_support_retry is False
    assert BrokerConfig.from_properties({"filterSupportRetry": "true"}).filter_support_retry is True
    assert BrokerConfig.from_properties({"filterSupportRetry": "false"}).filter_support_retry is False


@pytest.mark.parametrize("filter_support_retry", [False, True], ids=["off", "on"])
def test_a_push_consumers_retries_pass_its_sql92_subscription_only_with_filter_support_retry(
        tmp_path: Path, filter_support_retry: bool) -> None:
    topic, group = "SqlRetryPushTopic", "sql-retry-push-group"
    seen: list[tuple[int, int, str]] = []  # (number, reconsume times, topic the handler saw)

    def handle(batch: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend((int(m.body[1:]), m.reconsume_times, m.topic) for m in batch)
        # each message is given back once: its first delivery asks for a retry
        return ConsumeStatus.RECONSUME_LATER if batch[0].reconsume_times == 0 else ConsumeStatus.CONSUME_SUCCESS

    with make_cluster(tmp_path, filter_support_retry) as cluster:
        def retry_committed() -> dict[int, int]:
            return cluster.call(lambda: dict(cluster.broker.offsets.offsets(group, f"%RETRY%{group}")))

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "sql-retry-producer") as producer:
                for i in range(COUNT):
                    await producer.send(topic, f"m{i}".encode(), properties={"priority": priority(i)})
            async with PushConsumer(cluster.namesrv_addr, group, {topic: MessageSelector.by_sql(RETRY_SQL)}, handle,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    consume_batch_size=1, **FAST):
                # every message is given back and stored in the retry topic, whatever the flag ...
                await asyncio.to_thread(wait_for, lambda: retry_ends(cluster, group) == COUNT, 60,
                                        "every message in the retry topic")
                # ... and the group's pulls of it get to its end (past what the filter skips)
                await asyncio.to_thread(wait_for, lambda: retry_committed() == {0: COUNT}, 60,
                                        "the retry topic consumed to its end")

        run(go())

    first = sorted(n for n, times, _ in seen if times == 0)
    retried = sorted(n for n, times, _ in seen if times == 1)
    assert first == list(range(COUNT))
    assert {t for _, _, t in seen} == {topic}  # retries are handed over under the original topic
    if filter_support_retry:
        assert retried == [i for i in range(COUNT) if priority(i) == "high"] == [0, 3, 6, 9]
    else:
        assert retried == list(range(COUNT))
    assert all(times <= 1 for _, times, _ in seen)


def sql(topic: str, expression: str, version: int) -> SubscriptionData:
    return build_subscription(topic, expression, version, "SQL92")


def test_a_retry_pull_meets_the_groups_current_subscription_of_the_original_topic(tmp_path: Path) -> None:
    """Broker started with the flag off, turned on by UPDATE_BROKER_CONFIG (read per pull)."""
    topic, group = "SqlRetryRawTopic", "sql-retry-raw-group"
    retry = f"%RETRY%{group}"

    with make_cluster(tmp_path, False) as cluster:
        async def give_back() -> None:
            async with Producer(cluster.namesrv_addr, "sql-retry-producer") as producer:
                for i in range(10):
                    await producer.send(topic, f"m{i}".encode(), properties={"a": str(i)}, queue_id=0)
            await asyncio.to_thread(wait_stored, cluster, topic, 10, "ten messages")
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                result = await consumer.pull(MessageQueue(topic, cluster.broker_name, 0), 0, 32)
                assert len(result.messages) == 10
                for m in result.messages:
                    await send_back(consumer, ConsumedMessage.from_stored(m, cluster.broker_name, group),
                                    delay_level=1, max_reconsume_times=16)

        run(give_back())
        back = wait_stored(cluster, retry, 10, "ten given-back messages", queues=1)
        assert {m.properties.get("RETRY_TOPIC") for m in back} == {topic}
        # what a retry record carries beyond the original's properties, the expressions below see them too; DELAY
        # stays, as in 4.9.3, whose schedule service clears it from the map after making the stored text
        for m in back:
            assert {"RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "REAL_TOPIC", "REAL_QID", "a"} <= set(m.properties)
            assert m.properties["DELAY"] == "1"

        async def go() -> dict[str, Any]:
            out: dict[str, Any] = {}
            pool = ConnectionPool()
            version = 1

            async def with_subscriptions(*subs: SubscriptionData) -> list[int]:
                """Heartbeat the group's subscriptions, then pull its retry queue from 0 as Java does."""
                every = (*subs, build_subscription(retry, "*", version, "TAG"))
                data = HeartbeatData("127.0.0.1@sql-retry-test", (), (ConsumerData(group, subscriptions=every),))
                await group_requests.heartbeat(pool, cluster.broker_addr, data, 10)
                header = PullMessageRequestHeader(consumer_group=group, topic=retry, queue_id=0, queue_offset=0,
                                                  max_msg_nums=32, sys_flag=0, commit_offset=0, suspend_timeout_ms=0,
                                                  subscription="", sub_version=0, expression_type="TAG")
                response = await pool.request(cluster.broker_addr, RemotingCommand.request(
                    RequestCode.PULL_MESSAGE, header.to_ext_fields()), 10)
                if response.code == ResponseCode.PULL_RETRY_IMMEDIATELY:
                    return []
                assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
                return [int(m.body[1:]) for m in decode_messages(response.body)]

            try:
                out["off"] = await with_subscriptions(sql(topic, "a < 4", version))
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.update_broker_config({"filterSupportRetry": "true"}, broker_addr=cluster.broker_addr)
                out["on"] = await with_subscriptions(sql(topic, "a < 4", version))
                version += 1
                out["changed"] = await with_subscriptions(sql(topic, "a >= 7", version))
                version += 1
                out["none_match"] = await with_subscriptions(sql(topic, "a > 100", version))
                version += 1
                out["tag"] = await with_subscriptions(build_subscription(topic, "*", version, "TAG"))
                version += 1
                out["unsubscribed"] = await with_subscriptions()
                version += 1
                out["bad"] = await with_subscriptions(sql(topic, "a >", version))
            finally:
                await pool.close()
            return out

        out = run(go())
        assert cluster.broker.config.filter_support_retry is True
        # the matcher on its own: a record without RETRY_TOPIC passes (4.9.3 fails such a pull)
        assert cluster.call(lambda: retry_matcher(cluster.broker, group)({"a": "50"})) is True

    everything = list(range(10))
    assert out == {"off": everything, "on": [0, 1, 2, 3], "changed": [7, 8, 9], "none_match": [],
                   "tag": everything, "unsubscribed": everything, "bad": everything}
