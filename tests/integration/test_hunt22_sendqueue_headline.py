"""A send to a queue the topic's route lacks is refused before anything is sent, by every send path alike,
with an error whose type (QueueNotInRouteError, still a NoRouteError) and headline say what is wrong: a
queue id the topic lacks is headed by the words of 4.9.3's broker refusal ("request queueId[n] is illegal"),
a broker not in the route by 4.9.3's sendKernelImpl's "The broker[..] not exist", never by "No route info of
this topic" (the topic has a route).  An orderly send's selector and the CLI's ``send --queue`` (with and
without --broker) are refused the same way, and nothing is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_calls import refused
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.errors import QueueNotInRouteError
from rocketstore.client.route import MessageQueue

TOPIC = "Hunt22SendQueueTopic"
FAQ = "See http://rocketmq.apache.org/docs/faq/ for further details."


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def _queue_99(queues: list[MessageQueue], key: object) -> MessageQueue:
    return MessageQueue(TOPIC, queues[0].broker_name, 99)


def _broker_z(queues: list[MessageQueue], key: object) -> MessageQueue:
    return MessageQueue(TOPIC, "broker-z", 0)


def test_every_send_path_refuses_a_queue_the_route_lacks_in_its_own_words(cluster: LocalCluster) -> None:
    async def go() -> list[QueueNotInRouteError]:
        async with Producer(cluster.namesrv_addr, "hunt22-sendqueue-pg") as producer:
            broker = (await producer.fetch_publish_message_queues(TOPIC))[0].broker_name
            sends = [producer.send(TOPIC, b"x", queue_id=99),
                     producer.send_oneway(TOPIC, b"x", queue_id=99),
                     producer.send(TOPIC, b"x", message_queue=MessageQueue(TOPIC, broker, 99)),
                     producer.send_orderly(TOPIC, b"x", "k", selector=_queue_99),
                     producer.send_oneway_orderly(TOPIC, b"x", "k", selector=_queue_99),
                     producer.send(TOPIC, b"x", message_queue=MessageQueue(TOPIC, "broker-z", 0)),
                     producer.send_orderly(TOPIC, b"x", "k", selector=_broker_z)]
            errors = []
            for sending in sends:
                with pytest.raises(QueueNotInRouteError) as caught:
                    await sending
                errors.append(caught.value)
            return errors

    errors = cluster.run(go())
    ids = "(its queue ids: [0, 1])"
    for error in errors[:5]:
        assert str(error).startswith(f"request queueId[99] is illegal, topic: {TOPIC} {FAQ} Cause: queueId 99 "
                                     f"is not a writeable queue of topic '{TOPIC}'"), str(error)
        assert str(error).endswith(ids) and error.queue_id == 99 and error.topic == TOPIC
    for error in errors[5:]:
        assert str(error).startswith(f"The broker[broker-z] not exist {FAQ} Cause: the broker[broker-z] is "
                                     f"not a publish broker of topic '{TOPIC}'"), str(error)
    assert not any("No route info" in str(e) for e in errors)
    cluster.wait_dispatched()
    assert [cluster.broker.store.max_offset(TOPIC, q) for q in range(2)] == [0, 0]


def test_cli_send_queue_names_the_queue_not_a_missing_route(cluster: LocalCluster,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    plain = refused(capsys, cluster, "send", TOPIC, "hi", "--queue", "99")
    on_broker = refused(capsys, cluster, "send", TOPIC, "hi", "-b", "broker-a", "--queue", "99")
    for text in (plain, on_broker):
        assert "No route info" not in text and "request queueId[99] is illegal" in text, text
        assert f"queueId 99 is not a writeable queue of topic '{TOPIC}'" in text, text
    gone = refused(capsys, cluster, "send", TOPIC, "hi", "-b", "broker-z", "--queue", "0")
    assert "The broker[broker-z] not exist" in gone and "No route info" not in gone, gone
