"""Producer groups against 4.9.3's client, with a real name server and broker:

* every MQClientInstance starts an inner producer of group CLIENT_INNER_PRODUCER, so a Java client's
  heartbeats carry that group beside its own, and its shutdown unregisters both: the broker's producer table
  (``rocketstore producer connections CLIENT_INNER_PRODUCER``, mqadmin producerConnection) lists it there.
  Our Producer (and the producers built on it) heartbeats and unregisters the same two groups.
* DefaultMQProducerImpl.checkConfig runs Validators.checkGroup at start: a blank group, one over 255
  characters or one outside ``^[%|a-zA-Z0-9_-]+$`` does not start (MQClientException); ours refuses it at
  start() and on a send of a producer never started (ClientError, Java's wording), nothing sent.
* checkConfig also refuses DEFAULT_PRODUCER.  Our plain Producer keeps it as its default group (the broker
  treats it as any other group: heartbeats register it), but a TransactionProducer refuses it: the broker
  sends a transaction's check to any producer of the half message's group, and every Producer made without
  a group heartbeats in DEFAULT_PRODUCER with no check listener."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster, stored_messages
from local_cluster import producer_ids_on_loop as ids_on_loop

from rocketstore.client import (
    LocalTransactionState,
    OutgoingMessage,
    Producer,
    RequestProducer,
    TransactionProducer,
)
from rocketstore.client.errors import ClientError
from rocketstore.client.producer import CLIENT_INNER_PRODUCER_GROUP, DEFAULT_PRODUCER_GROUP

TOPIC = "Hunt16ProducerGroups"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_heartbeats_carry_the_inner_producer_group_and_close_unregisters_both(
        cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    plain = Producer(cluster.namesrv_addr, "hunt16-groups-plain")
    requester = RequestProducer(cluster.namesrv_addr, "hunt16-groups-requester")
    cluster.run(plain.start())
    cluster.run(requester.start())
    both = sorted([plain.client_id, requester.client_id])
    try:
        cluster.wait_until(lambda: ids_on_loop(cluster, CLIENT_INNER_PRODUCER_GROUP) == both, 10,
                           "both producers under CLIENT_INNER_PRODUCER")
        assert cluster.call(lambda: ids_on_loop(cluster, "hunt16-groups-plain")) == [plain.client_id]
        capsys.readouterr()
        info = ok_json(capsys, cluster, "producer", "connections", CLIENT_INNER_PRODUCER_GROUP, "-t", TOPIC)
        assert sorted(c["clientId"] for c in info["connectionSet"]) == both

        # the unregistration itself (not the connection closing, which drops the client too): both groups
        async def unregister() -> None:
            await plain._unregister(cluster.broker_addr)

        cluster.run(unregister())
        assert not plain._heartbeated[cluster.broker_addr].is_closed
        assert cluster.call(lambda: ids_on_loop(cluster, "hunt16-groups-plain")) == []
        assert cluster.call(lambda: ids_on_loop(cluster, CLIENT_INNER_PRODUCER_GROUP)) == [requester.client_id]
    finally:
        cluster.run(plain.close())
        cluster.run(requester.close())
    assert cluster.call(lambda: ids_on_loop(cluster, CLIENT_INNER_PRODUCER_GROUP)) == []


def test_a_producer_of_group_client_inner_producer_names_it_once(cluster: LocalCluster) -> None:
    producer = Producer(cluster.namesrv_addr, CLIENT_INNER_PRODUCER_GROUP)
    assert producer.heartbeat_data().producer_groups == (CLIENT_INNER_PRODUCER_GROUP,)
    cluster.run(producer.send(TOPIC, b"inner"))
    try:
        cluster.wait_until(lambda: ids_on_loop(cluster, CLIENT_INNER_PRODUCER_GROUP) == [producer.client_id], 10,
                           "the producer's heartbeat")
    finally:
        cluster.run(producer.close())


BAD_GROUPS = [
    ("", "the specified group is blank"),
    ("   ", "the specified group is blank"),
    ("g" * 256, "the specified group is longer than group max length 255."),
    ("hunt16.dotted", "the specified group[hunt16.dotted] contains illegal characters, allowing only "
                      "^[%|a-zA-Z0-9_-]+$"),
    ("hunt16 spaced", "the specified group[hunt16 spaced] contains illegal characters, allowing only "
                      "^[%|a-zA-Z0-9_-]+$"),
]


@pytest.mark.parametrize(("group", "expected"), BAD_GROUPS)
def test_a_bad_group_name_refuses_start_and_every_send_and_nothing_is_sent(
        cluster: LocalCluster, group: str, expected: str) -> None:
    async def go() -> list[str]:
        refusals = []
        started = Producer(cluster.namesrv_addr, group)
        try:
            with pytest.raises(ClientError) as caught:
                await started.start()
            refusals.append(str(caught.value))
            assert not started.started
        finally:
            await started.close()
        never_started = Producer(cluster.namesrv_addr, group)
        try:
            for sending in (never_started.send(TOPIC, b"x"), never_started.send_oneway(TOPIC, b"x"),
                            never_started.send_orderly(TOPIC, b"x", 1),
                            never_started.send_batch(TOPIC, [OutgoingMessage(b"x")])):
                with pytest.raises(ClientError) as caught:
                    await sending
                refusals.append(str(caught.value))
        finally:
            await never_started.close()
        requester = RequestProducer(cluster.namesrv_addr, group)
        try:
            with pytest.raises(ClientError) as caught:
                await requester.request(TOPIC, b"x", timeout_s=5.0)
            refusals.append(str(caught.value))
        finally:
            await requester.close()
        return refusals

    assert cluster.run(go()) == [expected] * 6
    cluster.wait_dispatched()
    assert stored_messages(cluster, TOPIC, 2) == []
    assert cluster.call(lambda: sorted(cluster.broker.clients.producers)) == []


def test_the_longest_group_name_and_every_allowed_character_start_and_send(cluster: LocalCluster) -> None:
    groups = ["g" * 255, "a%b|c_D-9"]

    async def go() -> None:
        for group in groups:
            async with Producer(cluster.namesrv_addr, group) as producer:
                assert (await producer.send(TOPIC, group[:8].encode())).status == "SEND_OK"

    cluster.run(go())
    cluster.wait_dispatched()
    assert len(stored_messages(cluster, TOPIC, 2)) == 2


def test_default_producer_stays_usable_by_a_plain_producer_but_not_by_a_transactional_one(
        cluster: LocalCluster) -> None:
    checks: list[object] = []

    def check(message: object) -> LocalTransactionState:
        checks.append(message)
        return LocalTransactionState.COMMIT_MESSAGE

    def execute(message: object, arg: object) -> LocalTransactionState:
        raise AssertionError("no half message may go out")

    async def go() -> list[str]:
        refusals = []
        async with Producer(cluster.namesrv_addr) as plain:  # the README's producer: DEFAULT_PRODUCER
            assert plain.group == DEFAULT_PRODUCER_GROUP
            assert (await plain.send(TOPIC, b"plain")).status == "SEND_OK"
            async with asyncio.timeout(10):
                while plain.client_id not in ids_on_loop(cluster, DEFAULT_PRODUCER_GROUP):
                    await asyncio.sleep(0.01)
        transactional = TransactionProducer(cluster.namesrv_addr, DEFAULT_PRODUCER_GROUP, check)
        try:
            with pytest.raises(ClientError) as caught:
                await transactional.start()
            refusals.append(str(caught.value))
            with pytest.raises(ClientError) as caught:
                await transactional.send_in_transaction(TOPIC, b"half", execute)
            refusals.append(str(caught.value))
            assert not transactional.started
        finally:
            await transactional.close()
        return refusals

    refused_start, refused_send = cluster.run(go())
    assert refused_start == "producerGroup can not equal DEFAULT_PRODUCER, please specify another one."
    # the start failed for good (START_FAILED), and a send says so in makeSureStateOK's words, as 4.9.3's
    assert refused_send.startswith("The producer service state not OK, START_FAILED"), refused_send
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, TOPIC, 2)] == [b"plain"]
    assert checks == []
