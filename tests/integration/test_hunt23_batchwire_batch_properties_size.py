"""A batch whose message properties (tags, keys or user properties) do not fit a batch entry's 16-bit length
is refused by send_batch before anything is sent with the client's MessageIllegalError ("Failed to initiate
the MessageBatch: ..."), as 4.9.3's DefaultMQProducer.batch wraps the RuntimeException of
MessageDecoder.encodeMessage ("Properties size of message exceeded") in an MQClientException.  It escaped as
rocketstore.errors.PropertiesTooLargeError, which is no ClientError: code catching the client's errors
missed it.  Real name server and broker; the producer goes on sending afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, wait_stored

from rocketstore.client import OutgoingMessage, Producer
from rocketstore.client.errors import ClientError, MessageIllegalError

TOPIC = "Hunt23BatchPropertiesSize"


def test_a_batch_with_too_long_properties_is_refused_as_a_client_error(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)
        too_long = [
            [OutgoingMessage(b"a", tags="t" * 40000)],
            [OutgoingMessage(b"a"), OutgoingMessage(b"b", keys="k" * 40000)],
            [OutgoingMessage(b"a", properties={"big": "v" * 40000})],
        ]

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt23-batch-props") as producer:
                for batch in too_long:
                    with pytest.raises(ClientError) as raised:
                        await producer.send_batch(TOPIC, batch)
                    assert isinstance(raised.value, MessageIllegalError)
                    assert str(raised.value.remark).startswith("Failed to initiate the MessageBatch: ")
                result = await producer.send_batch(TOPIC, [OutgoingMessage(b"ok", tags="t" * 100)])
                assert result.status == "SEND_OK"

        run_within(go, 60)  # type: ignore[arg-type]
        [stored] = wait_stored(cluster, TOPIC, 1, "the one batch that fits", queues=1)
    assert stored.body == b"ok"
