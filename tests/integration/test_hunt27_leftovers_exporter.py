"""The exporter: what counts as a scrape error, and a broadcasting group's offsets of topics it left.

A scrape error is what a peer can cause: no connection, no answer, an error code, a body that does not
decode or reads in an unexpected shape (the admin client raises its own ClientError for those).  The
exporter used to count TypeError, AttributeError and KeyError raised anywhere under a call as scrape
errors too, so that a bug in the exporter itself showed as a broker that answered badly; now those fail
the collection.  The admin calls that read a body of the wrong shape with a raw TypeError, AttributeError
or ValueError (the topic list, the cluster info, QUERY_TOPIC_CONSUME_BY_WHO, a group's connections, a stat
item) raise ClientError instead, so that a peer's odd answer is still a scrape error.

An online broadcasting group is listed as consuming a topic it no longer subscribes to while the brokers
hold old offsets of it there (QUERY_TOPIC_CONSUME_BY_WHO lists groups holding offsets).  4.9.3's consume
stats of an online group leave out a topic it does not subscribe to (AdminBrokerProcessor's
getConsumeStats and fetchAllConsumeStatsInBroker skip it), so apache/rocketmq-exporter, which serves the
offsets the consume stats return, serves none for it; ours served 0 on every broker of that topic.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from local_cluster import LocalCluster
from prometheus_client.parser import text_string_to_metric_families

from rocketstore.client import ConsumedMessage, ConsumeStatus, MessageModel, PullConsumer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError
from rocketstore.client.exporter import collect, render
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.codec import encode_command
from rocketstore.remoting.frame_decoder import decode_command
from rocketstore.remoting.transport import run

TOPIC = "Hunt27LeftoversSubscribed"
LEFT = "Hunt27LeftoversLeft"  # a topic the group consumed by clustering once, and no longer subscribes to
GROUP = "hunt27-leftovers-broadcast"


Values = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _values(text: str) -> Values:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _find(values: Values, name: str, **labels: str) -> list[float]:
    return sorted(v for (n, ls), v in values.items() if n == name and set(labels.items()) <= ls)


def test_a_broadcasting_group_has_no_offset_of_a_topic_it_left(tmp_path: Any) -> None:
    with LocalCluster(tmp_path / "store-a") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b")
        try:
            addrs = [cluster.broker_addr, broker_b.address]
            cluster.create_topic_on(TOPIC, addrs)
            cluster.create_topic_on(LEFT, addrs)

            async def commit() -> None:  # the group's offsets on both brokers from a former clustering life
                async with PullConsumer(cluster.namesrv_addr, GROUP) as puller:
                    for name in ("broker-a", "broker-b"):
                        await puller.commit_offset(MessageQueue(LEFT, name, 0), 0)

            run(commit())
            for broker in (cluster.broker, broker_b):
                def held(b: Any = broker) -> bool:
                    return GROUP in b.offsets.groups_of_topic(LEFT)

                cluster.wait_until(held, 20, "the old offsets")

            async def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
                return ConsumeStatus.CONSUME_SUCCESS

            async def start() -> PushConsumer:
                consumer = PushConsumer(cluster.namesrv_addr, GROUP, {TOPIC: "*"}, handle,
                                        message_model=MessageModel.BROADCASTING,
                                        offset_dir=str(tmp_path / "offsets"), heartbeat_interval_s=0.5)
                await consumer.start()
                return consumer

            consumer = cluster.run(start())
            try:
                for broker in (cluster.broker, broker_b):
                    def subscribed(b: Any = broker) -> bool:
                        return GROUP in b.clients.groups_subscribing(TOPIC)

                    cluster.wait_until(subscribed, 20, "the heartbeat")

                async def scrape() -> str:
                    async with AdminClient(cluster.namesrv_addr) as admin:
                        return render(await collect(admin))

                values = _values(run(scrape()))
            finally:
                cluster.run(consumer.shutdown())
        finally:
            cluster.run(broker_b.close())
    assert _find(values, "rocketmq_consumer_offset", group=GROUP, topic=TOPIC, broker="broker-a") == [0]
    assert _find(values, "rocketmq_consumer_offset", group=GROUP, topic=TOPIC, broker="broker-b") == [0]
    assert _find(values, "rocketmq_consumer_offset", group=GROUP, topic=LEFT) == []  # was [0, 0]
    assert _find(values, "rocketmq_group_count", group=GROUP) == [1]
    assert _find(values, "rocketstore_exporter_scrape_errors") == [0]


def test_a_bug_of_the_exporter_fails_the_collection(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def scrape() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await collect(admin)

        run(scrape())  # a healthy collection first
        for error in (AttributeError("a misspelt field"), KeyError("label"), TypeError("bad call")):
            async def buggy(self: AdminClient, broker_addr: str, topic: str, error: Exception = error) -> Any:
                raise error

            monkeypatch.setattr(AdminClient, "topic_stats_on", buggy)
            with pytest.raises(type(error)):
                run(scrape())


#: answers of the wrong shape, each to the one call reading it (every one a SUCCESS): a peer's doing
_ODD = {
    "topic_list": b'{"topicList":5}',
    "cluster_info": b'{"brokerAddrTable":5}',
    "cluster_info ": b'{"clusterAddrTable":{"c":1}}',
    "consumed_by": b'{"groupList":5}',
    "consumer_connection_on": b'{"subscriptionTable":5}',
    "view_stats": b'{"statsMinute":{"sum":"x","tps":1.0}}',
    "view_stats ": b'{"statsMinute":{"sum":[1],"tps":1.0}}',
}


@pytest.mark.parametrize("call", sorted(_ODD))
def test_an_answer_of_the_wrong_shape_is_a_client_error(call: str) -> None:
    async def go() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    size = int.from_bytes(await reader.readexactly(4), "big")
                    request = decode_command(await reader.readexactly(size))
                    writer.write(encode_command(request.make_response(0, body=_ODD[call])))
            except (asyncio.IncompleteReadError, ConnectionError):
                pass

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            async with AdminClient(addr, timeout_s=5) as admin:
                calls = {"topic_list": admin.topic_list, "cluster_info": admin.cluster_info,
                         "consumed_by": lambda: admin.consumed_by("T", [addr]),
                         "consumer_connection_on": lambda: admin.consumer_connection_on(addr, "G"),
                         "view_stats": lambda: admin.view_stats(addr, "TOPIC_PUT_NUMS", "T")}
                with pytest.raises(ClientError, match="unexpected"):
                    await calls[call.strip()]()
        finally:
            server.close()

    run(go())
