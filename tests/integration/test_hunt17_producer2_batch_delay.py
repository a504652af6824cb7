"""A batch message whose DELAY is no Java int is refused before anything is sent, as 4.9.3's
MessageBatch.generateFromList reads each message's getDelayTimeLevel (Integer.parseInt) and
DefaultMQProducer.batch wraps its NumberFormatException in "Failed to initiate the MessageBatch".  It was
sent (the check took only decimal digits as a level and let anything else through)."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, wait_stored

from rocketstore.client import Producer
from rocketstore.client.errors import MessageIllegalError
from rocketstore.client.producer import OutgoingMessage

TOPIC = "Hunt17Producer2BatchDelay"


def test_a_batch_with_a_delay_that_is_no_int_is_not_sent(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt17-producer2-batch") as producer:
                for delay in ("abc", "9999999999", "1.5"):
                    with pytest.raises(MessageIllegalError) as raised:
                        await producer.send_batch(TOPIC, [OutgoingMessage(b"a"),
                                                          OutgoingMessage(b"b", properties={"DELAY": delay})])
                    assert str(raised.value.remark) == ("Failed to initiate the MessageBatch: java.lang."
                                                        f'NumberFormatException: For input string: "{delay}"')
                # a level Java reads as 0 or less goes out
                await producer.send_batch(TOPIC, [OutgoingMessage(b"ok", properties={"DELAY": "-1"})])

        run_within(go, 60)  # type: ignore[arg-type]
        [stored] = wait_stored(cluster, TOPIC, 1, "the one batch that may go out", queues=1)
    assert stored.body == b"ok"
