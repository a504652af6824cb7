"""Operators asking a consumer about itself through the broker (mqadmin consumerStatus / consumeMessage):
GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY, from the admin client through a real broker to a
real push consumer, and the broker's errors when the consumer is not there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from test_python_push_consumer import FAST, arun, create_topic, eventually

from rocketstore.client import ConsumedMessage, ConsumeStatus, Producer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError
from rocketstore.client.exporter import Sample, collect
from rocketstore.remoting.consumer_bodies import CMResult, ConsumerRunningInfo

#: the exporter's figures of one online client, per topic it reports
CLIENT_METRICS = ("rocketmq_client_consume_fail_msg_count", "rocketmq_client_consume_fail_msg_tps",
                  "rocketmq_client_consume_ok_msg_tps", "rocketmq_client_consume_rt",
                  "rocketmq_client_consumer_pull_rt", "rocketmq_client_consumer_pull_tps")


def test_running_info_reports_settings_subscriptions_held_queues_and_rates(cluster: LocalCluster) -> None:
    seen: list[bytes] = []

    async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, "StatusT", 4)
        async with PushConsumer(cluster.namesrv_addr, "status-group", {"StatusT": "TagA || TagB"}, handle,
                                **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment("StatusT")) == 4, 20, "4 queues assigned")
            async with Producer(cluster.namesrv_addr, "status-producer") as producer:
                for i in range(12):
                    await producer.send("StatusT", b"s%d" % i, tags="TagA")
            await eventually(lambda: len(seen) == 12, 20, "12 messages consumed")
            await consumer.persist_offsets()

            broker_addr, clients = await admin.consumer_connections("status-group")
            assert broker_addr == cluster.broker_addr
            assert [c.client_id for c in clients] == [consumer.client_id]
            assert clients[0].language == "JAVA"

            info = await admin.consumer_running_info("status-group", consumer.client_id)
            assert info.properties["consumerGroup"] == "status-group"
            assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
            assert info.properties[ConsumerRunningInfo.PROP_CONSUME_ORDERLY] == "false"
            # 4.9.3's MQClientInstance writes each name server followed by ";"
            assert info.properties[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == cluster.namesrv_addr + ";"
            assert int(info.properties[ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP]) > 0
            subs = {s.topic: s for s in info.subscriptions}
            assert set(subs) == {"StatusT", "%RETRY%status-group"}
            assert subs["StatusT"].tags_set == ("TagA", "TagB")
            status_queues = {k: v for k, v in info.mq_table.items() if k[0] == "StatusT"}
            assert sorted(k[2] for k in status_queues) == [0, 1, 2, 3]
            assert all(k[1] == cluster.broker.config.broker_name for k in status_queues)
            # everything was consumed: nothing cached, and the committed offsets add up to the messages sent
            assert sum(v.commit_offset for v in status_queues.values()) == 12
            assert all(v.cached_msg_count == 0 and not v.dropped for v in status_queues.values())
            assert all(v.last_pull_timestamp > 0 for v in status_queues.values())
            rates = info.status_table["StatusT"]
            assert rates.pull_tps > 0 and rates.consume_ok_tps > 0
            assert rates.consume_failed_tps == 0 and rates.consume_failed_msgs == 0
            assert info.jstack is None

            dumped = await admin.consumer_running_info("status-group", consumer.client_id, jstack=True)
            assert dumped.jstack is not None and "MainThread" in dumped.jstack

    arun(go)


def test_consume_directly_hands_one_stored_message_to_the_handler_and_reports_its_verdict(
        cluster: LocalCluster) -> None:
    seen: list[bytes] = []

    def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
        body = messages[0].body
        seen.append(body)
        if body == b"boom":
            raise RuntimeError("handler exploded")
        return ConsumeStatus.RECONSUME_LATER if body == b"later" else ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, "DirectT", 1)
        async with PushConsumer(cluster.namesrv_addr, "direct-group", {"DirectT": "*"}, handle,
                                **FAST) as consumer, AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment("DirectT")) == 1, 20, "the queue assigned")
            async with Producer(cluster.namesrv_addr, "direct-producer") as producer:
                ok = await producer.send("DirectT", b"fine")
                later = await producer.send("DirectT", b"later")
                boom = await producer.send("DirectT", b"boom")
            await eventually(lambda: {b"fine", b"boom"} <= set(seen), 20, "first deliveries")
            seen.clear()

            client = consumer.client_id
            result = await admin.consume_message_directly("direct-group", client, ok.offset_msg_id)
            assert result.consume_result == CMResult.SUCCESS and not result.order and result.auto_commit
            assert b"fine" in seen
            # a UNIQ_KEY needs its topic, and is looked up in the index (built by dispatch, after the queues)
            await eventually(lambda: admin.query_by_uniq_key("DirectT", later.msg_id), 10, "the id in the index")
            result = await admin.consume_message_directly("direct-group", client, later.msg_id, "DirectT")
            assert result.consume_result == CMResult.LATER
            result = await admin.consume_message_directly("direct-group", client, boom.offset_msg_id)
            assert result.consume_result == CMResult.THROW_EXCEPTION
            assert result.remark is not None and "handler exploded" in result.remark
            with pytest.raises(ClientError, match="topic"):
                await admin.consume_message_directly("direct-group", client, later.msg_id)

            # the broker's own answers: no such client, no such message
            with pytest.raises(ClientError, match="not online"):
                await admin.consume_message_directly("direct-group", "10.9.9.9@nobody", ok.offset_msg_id)
            with pytest.raises(ClientError, match="not online"):
                await admin.consumer_running_info("direct-group", "10.9.9.9@nobody",
                                                  broker_addr=cluster.broker_addr)
            missing = ok.offset_msg_id[:-16] + "%016X" % (1 << 40)
            with pytest.raises(ClientError, match="can not find message"):
                await admin.consume_message_directly("direct-group", client, missing)
        with pytest.raises(ClientError, match="not online"):
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.consumer_connections("direct-group")

    arun(go)


def test_a_consumer_that_does_not_answer_in_time_gets_consume_msg_timeout(cluster: LocalCluster,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketstore.broker import consumer_calls
    from rocketstore.client.errors import BrokerError
    from rocketstore.remoting.codes import ResponseCode

    monkeypatch.setattr(consumer_calls, "CALL_CLIENT_TIMEOUT_S", 0.3)  # RocketMQ's 10 s, shortened

    async def slow(messages: list[ConsumedMessage]) -> ConsumeStatus:
        await asyncio.sleep(2.0 if messages[0].body == b"slow" else 0)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        await create_topic(cluster, "SlowT", 1)
        async with PushConsumer(cluster.namesrv_addr, "slow-group", {"SlowT": "*"}, slow, **FAST) as consumer, \
                AdminClient(cluster.namesrv_addr) as admin:
            await eventually(lambda: len(consumer.assignment("SlowT")) == 1, 20, "the queue assigned")
            async with Producer(cluster.namesrv_addr, "slow-producer") as producer:
                sent = await producer.send("SlowT", b"slow")
            with pytest.raises(BrokerError) as caught:
                await admin.consume_message_directly("slow-group", consumer.client_id, sent.offset_msg_id)
            assert caught.value.code == ResponseCode.CONSUME_MSG_TIMEOUT
            assert "Timeout" in str(caught.value)

    arun(go)


@requires_cpp_client
def test_the_official_cpp_push_consumer_reports_its_running_info(tmp_path: Path) -> None:
    """A real peer: librocketmq answers GET_CONSUMER_RUNNING_INFO with jsoncpp's pretty-printed,
    object-keyed body (string numbers, "flase" for false); the admin client reads it."""
    topic, group = "CppStatusT", "cpp-status-group"
    with LocalCluster(tmp_path / "store") as cluster:
        async def produce() -> None:
            async with Producer(cluster.namesrv_addr, "cpp-status-producer") as producer:
                for i in range(6):
                    await producer.send(topic, b"c%d" % i, tags="TagA")

        arun(produce)
        consumer = Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= 6, 30, "6 pushed messages")

            async def ask() -> tuple[list[Any], ConsumerRunningInfo]:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    _, clients = await admin.consumer_connections(group)

                    async def offsets_reported() -> ConsumerRunningInfo | None:
                        info = await admin.consumer_running_info(group, clients[0].client_id)
                        mine = [v.commit_offset for k, v in info.mq_table.items() if k[0] == topic]
                        return info if sum(mine) == 6 else None

                    return clients, await eventually(offsets_reported, 20, "the C++ consumer's offsets")

            clients, info = arun(ask)
            assert [c.language for c in clients] == ["CPP"]
            assert {s.topic for s in info.subscriptions} == {topic, f"%RETRY%{group}"}
            assert sorted(k[2] for k in info.mq_table if k[0] == topic) == [0, 1, 2, 3]
            assert info.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
            assert info.properties[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == cluster.namesrv_addr

            async def scrape() -> list[Sample]:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    return await collect(admin)

            # the Prometheus exporter counts it online and serves the figures it reports about itself
            samples = arun(scrape)
            counted = [(dict(s.labels)["localaddr"], s.value) for s in samples
                       if s.name == "rocketmq_group_count" and dict(s.labels)["group"] == group]
            assert counted == [(clients[0].client_id, 1.0)]
            own = {(s.name, dict(s.labels)["topic"]): s.value for s in samples
                   if s.name.startswith("rocketmq_client_") and dict(s.labels)["clientId"] == clients[0].client_id}
            # librocketmq reports no per-topic figures (it never fills its statusTable): none are served for it,
            # and asking it is no error
            assert set(own) == {(name, t) for name in CLIENT_METRICS for t in info.status_table}
            assert [s.value for s in samples if s.name == "rocketstore_exporter_scrape_errors"] == [0.0]
            consumer.stop()
        finally:
            consumer.kill()
