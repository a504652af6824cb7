"""Producer edges against 4.9.3's DefaultMQProducerImpl, with a real name server and broker:

* sendSelectImpl: a MessageQueueSelector that returns null is "select message queue return null.", one that
  throws is "select message queue threw exception." (an MQClientException either way): ClientError here,
  nothing sent;
* a queue id past the route is refused before anything is sent, by send and send_oneway alike, naming the
  queue ids there are (4.9.3's broker would answer "request queueId[n] is illegal");
* a producer shut down refuses every send ("The producer service state not OK"): ClientError, whichever
  send path and whether or not the topic's route is cached, and a second close() does nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, stored_messages

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import ClientError, NoRouteError
from rocketstore.client.route import MessageQueue

TOPIC = "Hunt15EdgeTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_a_selector_returning_none_or_raising_is_a_client_error_and_nothing_is_sent(cluster: LocalCluster) -> None:
    def none(queues: list[MessageQueue], key: object) -> MessageQueue:
        return None  # type: ignore[return-value]

    def raising(queues: list[MessageQueue], key: object) -> MessageQueue:
        raise LookupError(f"no queue for {key}")

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt15-edge-sel") as producer:
            with pytest.raises(ClientError, match=r"^select message queue return null\.$"):
                await producer.send_orderly(TOPIC, b"a", "k", selector=none)
            with pytest.raises(ClientError, match="select message queue threw exception") as caught:
                await producer.send_orderly(TOPIC, b"b", "k", selector=raising)
            assert isinstance(caught.value.__cause__, LookupError)
            result = await producer.send_orderly(TOPIC, b"c", "k", selector=lambda qs, k: qs[-1])
            assert result.status == "SEND_OK" and result.message_queue.queue_id == 1

    cluster.run(go())
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, TOPIC, 2)] == [b"c"]


def test_a_closed_producer_refuses_every_send_and_closes_once(cluster: LocalCluster) -> None:
    async def go() -> list[str]:
        producer = Producer(cluster.namesrv_addr, "hunt15-edge-closed")
        await producer.send(TOPIC, b"before")  # the route is cached, the connection open
        await producer.close()
        await producer.close()
        refusals = []
        for sending in (producer.send(TOPIC, b"x"), producer.send("Hunt15EdgeUnknown", b"x"),
                        producer.send_oneway(TOPIC, b"x"), producer.send_orderly(TOPIC, b"x", 1),
                        producer.send_batch(TOPIC, [OutgoingMessage(b"x")])):
            with pytest.raises(ClientError) as caught:
                await sending
            refusals.append(str(caught.value))
        with pytest.raises(ClientError):
            await producer.start()
        return refusals

    assert cluster.run(go()) == [("The producer service state not OK, SHUTDOWN_ALREADY See http://rocketmq.apache.org"
                                  "/docs/faq/ for further details. Cause: the producer is closed")] * 5
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, TOPIC, 2)] == [b"before"]


def test_a_queue_id_past_the_route_is_named_by_send_and_send_oneway(cluster: LocalCluster) -> None:
    async def go() -> list[str]:
        async with Producer(cluster.namesrv_addr, "hunt15-edge-queue") as producer:
            errors = []
            for sending in (producer.send(TOPIC, b"x", queue_id=7), producer.send_oneway(TOPIC, b"x", queue_id=7)):
                with pytest.raises(NoRouteError) as caught:
                    await sending
                errors.append(str(caught.value))
            return errors

    expected = f"queueId 7 is not a writeable queue of topic '{TOPIC}' (its queue ids: [0, 1])"
    assert [e.endswith(expected) for e in cluster.run(go())] == [True, True]
