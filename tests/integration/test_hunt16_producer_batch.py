"""A batch's own WAIT, as 4.9.3's producer sends it: MessageBatch.generateFromList gives the batch its first
message's waitStoreMsgOK (and refuses messages that disagree on it), so the SEND_BATCH_MESSAGE header's
properties are ``WAIT\\x01true`` (or false).  The broker honours that WAIT for the whole batch and appends the
batch's properties with CLUSTER to every entry's stored properties, so a batch from our producer is stored
with the bytes a Java producer's gets.  Real name server and broker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, stored_messages

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import MessageIllegalError
from rocketstore.message.properties import encode_properties

TOPIC = "Hunt16ProducerBatch"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_a_batch_carries_its_wait_and_every_entry_is_stored_with_it(cluster: LocalCluster) -> None:
    uniform = [OutgoingMessage(f"u{i}".encode(), tags="TagU") for i in range(3)]
    keyed = [OutgoingMessage(b"k0", keys="key-0"), OutgoingMessage(b"k1", tags="T", properties={"a": "b"})]
    not_waiting = [OutgoingMessage(b"n0", properties={"WAIT": "false"}),
                   OutgoingMessage(b"n1", properties={"WAIT": "FALSE"})]

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt16-batch") as producer:
            for batch in (uniform, keyed, not_waiting):
                assert (await producer.send_batch(TOPIC, batch, queue_id=0)).status == "SEND_OK"

    cluster.run(go())
    cluster.wait_dispatched()
    cluster_name = cluster.broker.config.broker_cluster_name
    suffix = {wait: "\x02" + encode_properties({"WAIT": wait, "CLUSTER": cluster_name}) for wait in ("true", "false")}
    stored = {m.body: m.properties_string for m in stored_messages(cluster, TOPIC, 2)}
    assert sorted(stored) == [b"k0", b"k1", b"n0", b"n1", b"u0", b"u1", b"u2"]
    for body, text in stored.items():
        expected = suffix["false" if body.startswith(b"n") else "true"]
        assert text.endswith(expected), (body, text)


def test_messages_that_disagree_on_wait_are_not_a_batch(cluster: LocalCluster) -> None:
    mixed = [OutgoingMessage(b"w0"), OutgoingMessage(b"w1", properties={"WAIT": "false"})]

    async def go() -> str:
        async with Producer(cluster.namesrv_addr, "hunt16-batch-mixed") as producer:
            with pytest.raises(MessageIllegalError) as caught:
                await producer.send_batch(TOPIC, mixed)
            return caught.value.remark or ""

    assert cluster.run(go()) == ("Failed to initiate the MessageBatch: "
                                 "The waitStoreMsgOK of the messages in one batch should the same")
    cluster.wait_dispatched()
    assert stored_messages(cluster, TOPIC, 2) == []
