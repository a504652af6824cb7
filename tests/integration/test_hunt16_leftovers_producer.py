"""Leftovers of the Python producer compared with the 4.9.3 Java client, against a real broker:

* DefaultMQProducerImpl.sendKernelImpl, for a send to a ``%RETRY%`` topic, moves the message's
  RECONSUME_TIME and MAX_RECONSUME_TIMES properties into the request header (reconsumeTimes,
  maxReconsumeTimes); the broker's handleRetryAndDLQ reads those, so a message whose reconsume times
  reached its max goes to ``%DLQ%<group>``.  Other topics keep the properties and reconsumeTimes 0.
* DefaultMQProducerImpl.request / waitResponse: a request message whose send fails raises
  "send request message to <topic> fail" with the send's error as the cause; a message the client
  refuses before sending (Validators.checkMessage) raises as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, stored_messages, wait_stored
from serve_process import cli

from rocketstore.client import MessageQueue, Producer, RequestProducer, RequestSendError
from rocketstore.client.errors import BrokerError, ClientError, MessageIllegalError
from rocketstore.remoting.bodies import TopicConfig

TEST_TIMEOUT_S = 60.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def _routed(cluster: LocalCluster, topic: str, group: str | None = None) -> None:
    def create() -> None:
        cluster.broker.topics.update(TopicConfig(topic, read_queue_nums=1, write_queue_nums=1))
        if group is not None:
            cluster.broker.groups.find_or_create(group)

    cluster.call(create)
    cluster.run(cluster.broker.registrar.register_all())


def _first_queue(queues: list[MessageQueue], _key: object) -> MessageQueue:
    return queues[0]


@pytest.mark.parametrize("how", ["send", "send_oneway", "send_orderly"])
def test_a_retry_send_past_its_max_reconsume_times_goes_to_the_dlq(cluster: LocalCluster, how: str) -> None:
    group = f"leftover-dlq-{how.replace('_', '-')}"
    _routed(cluster, "%RETRY%" + group, group)
    props = {"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "+3", "RETRY_TOPIC": "Origin"}

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "leftover-producer") as producer:
            topic = "%RETRY%" + group
            if how == "send":
                await producer.send(topic, b"dead", properties=props)
            elif how == "send_oneway":
                await producer.send_oneway(topic, b"dead", properties=props)
            else:
                await producer.send_orderly(topic, b"dead", "key", properties=props, selector=_first_queue)

    run_within(go, TEST_TIMEOUT_S)
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    assert dead.body == b"dead" and dead.reconsume_times == 3
    # kept in the record too: 4.9.3's sendKernelImpl writes the properties string before it reads them
    assert (dead.properties["RECONSUME_TIME"], dead.properties["MAX_RECONSUME_TIMES"]) == ("3", "+3")
    assert stored_messages(cluster, "%RETRY%" + group, queues=1) == []
    assert props["RECONSUME_TIME"] == "3"  # the caller's dict is not changed


def test_a_retry_send_below_its_max_is_stored_with_its_reconsume_times(cluster: LocalCluster) -> None:
    group = "leftover-retry-below"
    _routed(cluster, "%RETRY%" + group, group)

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "leftover-producer") as producer:
            await producer.send("%RETRY%" + group, b"again", properties={"RECONSUME_TIME": "007"})

    run_within(go, TEST_TIMEOUT_S)
    [stored] = wait_stored(cluster, "%RETRY%" + group, 1, "the retry message", queues=1)
    assert stored.reconsume_times == 7 and stored.properties["RECONSUME_TIME"] == "007"


def test_a_large_retry_send_carries_the_fields_too(cluster: LocalCluster) -> None:
    # a body over the frame-template limit (and over the compression threshold) takes the other path
    group = "leftover-retry-large"
    _routed(cluster, "%RETRY%" + group, group)
    body = bytes(range(256)) * 1024

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "leftover-producer") as producer:
            await producer.send("%RETRY%" + group, body,
                                properties={"RECONSUME_TIME": "16", "MAX_RECONSUME_TIMES": "16"})

    run_within(go, TEST_TIMEOUT_S)
    [dead] = wait_stored(cluster, "%DLQ%" + group, 1, "the dead letter", queues=1)
    assert dead.reconsume_times == 16


def test_other_topics_keep_the_properties(cluster: LocalCluster) -> None:
    topic = "LeftoverPlainTopic"
    _routed(cluster, topic)

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "leftover-producer") as producer:
            await producer.send(topic, b"plain",
                                properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "3"})

    run_within(go, TEST_TIMEOUT_S)
    [stored] = wait_stored(cluster, topic, 1, "the message", queues=1)
    assert stored.reconsume_times == 0
    assert (stored.properties["RECONSUME_TIME"], stored.properties["MAX_RECONSUME_TIMES"]) == ("3", "3")


@pytest.mark.parametrize("value", ["x", "1.5", " 3", "2147483648", ""])
def test_a_reconsume_time_that_is_no_java_int_is_refused(cluster: LocalCluster, value: str) -> None:
    group = "leftover-retry-bad"
    _routed(cluster, "%RETRY%" + group, group)

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "leftover-producer") as producer:
            with pytest.raises(ClientError, match="For input string"):
                await producer.send("%RETRY%" + group, b"bad", properties={"MAX_RECONSUME_TIMES": value})

    run_within(go, TEST_TIMEOUT_S)
    cluster.wait_dispatched()
    assert cluster.call(lambda: cluster.broker.put_count) == 0


def test_a_request_whose_send_fails_is_wrapped_with_its_cause(cluster: LocalCluster) -> None:
    topic = "LeftoverRequestTopic"
    _routed(cluster, topic)

    async def go() -> None:
        async with RequestProducer(cluster.namesrv_addr, "leftover-requester", retry_times=0) as requester:
            # the broker refuses a DELAY that is no Java int (CommitLog's Integer.parseInt)
            with pytest.raises(RequestSendError) as caught:
                await requester.request(topic, b"q", timeout_s=10.0, properties={"DELAY": "1.5"})
            assert str(caught.value) == f"send request message to <{topic}> fail"
            assert isinstance(caught.value.__cause__, BrokerError)
            # what the client refuses before sending is not wrapped
            with pytest.raises(MessageIllegalError, match="body length is zero"):
                await requester.request(topic, b"", timeout_s=10.0)

    run_within(go, TEST_TIMEOUT_S)


def test_the_cli_request_prints_the_wrapped_error_and_its_cause(cluster: LocalCluster) -> None:
    topic = "LeftoverCliRequestTopic"
    _routed(cluster, topic)
    out = cli("request", topic, "q", "--property", "DELAY=1.5", "--timeout", "30",
              "--namesrv", cluster.namesrv_addr)
    assert out.returncode == 1
    first = out.stderr.strip().splitlines()[-1]
    assert f"send request message to <{topic}> fail: " in first and "SYSTEM_ERROR" in first.upper(), out.stderr
