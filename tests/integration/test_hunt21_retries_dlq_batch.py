"""Dead letters and retries compared with RocketMQ 4.9.3, on a real broker.

* 4.9.3's SendMessageProcessor.asyncSendBatchMessage stores a batch sent to a ``%DLQ%`` topic like any other
  (only the Java client's ``batch()`` refuses ``%RETRY%`` topics; the broker's refusal of both
  prefixes came with 5.0): a tool putting dead letters back as one batch works there.
* The orderly service's dead letter and the concurrent service's fallback resend go out through the client's
  inner producer, which compresses a body of 4 KiB or more (DefaultMQProducerImpl.tryToCompressMessage).
"""

from __future__ import annotations

import zlib
from pathlib import Path

from local_cluster import LocalCluster, run_within

from rocketstore.broker.schedule import SCHEDULE_TOPIC
from rocketstore.client import Producer, PullConsumer
from rocketstore.client.outgoing_message import OutgoingMessage
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.send_back import resend_to_retry_topic
from rocketstore.message.record import SysFlag

TEST_TIMEOUT_S = 60.0


def test_a_batch_sent_to_a_dlq_topic_is_stored_as_4_9_3_stores_it(tmp_path: Path) -> None:
    dlq = "%DLQ%hunt21-retries-batch"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(dlq)

        async def go() -> str:
            async with Producer(cluster.namesrv_addr, "hunt21-retries-producer") as producer:
                sent = await producer.send_batch(dlq, [OutgoingMessage(b"dead-1"), OutgoingMessage(b"dead-2")],
                                                 queue_id=0)
            return sent.status

        assert run_within(go, TEST_TIMEOUT_S) == "SEND_OK"
        cluster.wait_dispatched()
        stored = cluster.call(lambda: cluster.broker.store.get(dlq, 0, 0, 8).messages)
        assert [m.body for m in stored] == [b"dead-1", b"dead-2"]
        assert all(m.topic == dlq and m.reconsume_times == 0 for m in stored)


def test_a_resend_of_a_long_body_goes_out_compressed_as_the_java_inner_producer_sends_it(tmp_path: Path) -> None:
    # 4.9.3's orderly dead letter and the concurrent fallback are sends of the client's inner producer, whose
    # sendKernelImpl compresses a body of compressMsgBodyOverHowmuch (4 KiB) or more: the record is flagged
    # COMPRESSED and holds the zlib data, as the first send's own record does
    topic, group = "Hunt21RetriesLong", "hunt21-retries-long"
    body = b"a long body that compresses well " * 300
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt21-retries-producer") as producer:
                sent = await producer.send(topic, body, queue_id=0)
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                [stored] = (await consumer.pull(sent.message_queue, 0, suspend_ms=5000)).messages
                message = ConsumedMessage.from_stored(stored, cluster.broker_name, group)
                assert message.body == body
                # as the orderly service past its limit: the count as it is, the broker buries it
                await resend_to_retry_topic(consumer, message, reconsume_times=0, max_reconsume_times=0)

        run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        [first] = cluster.call(lambda: cluster.broker.store.get(topic, 0, 0, 8).messages)
        # DELAY 3 (3 + reconsumeTimes 0) kept on the way to the DLQ, as 4.9.3's send path keeps it
        [dead] = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 2, 0, 8).messages)
        assert dead.properties["REAL_TOPIC"] == "%DLQ%" + group
        assert first.sys_flag & SysFlag.COMPRESSED and dead.sys_flag & SysFlag.COMPRESSED
        assert len(dead.body) < len(body) and zlib.decompress(dead.body) == body
