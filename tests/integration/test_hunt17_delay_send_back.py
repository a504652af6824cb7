"""Send-backs and resends to a group's retry topic compared with RocketMQ 4.9.3, on a real broker:

* SendMessageProcessor.asyncConsumerSendMsgBack answers a group it does not have (autoCreateSubscriptionGroup
  off) with SUBSCRIPTION_GROUP_NOT_EXIST and the remark ``"subscription group not exist, " + group + " " +
  FAQUrl.suggestTodo(...)``: a space between the group and the FAQ text's new line.
* DefaultMQPushConsumerImpl.sendMessageBack's fallback (and the orderly service's sendMessageBack) puts
  RECONSUME_TIME and MAX_RECONSUME_TIMES among the message's properties; DefaultMQProducerImpl.sendKernelImpl
  writes the properties string before it moves both into the request header, so the stored record keeps them;
  a message without a UNIQ_KEY gets one there (MessageClientIDSetter.setUniqID).
* ScheduleMessageService.correctDelayOffset clamps the delay offsets of the levels configured only.
"""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import SMALL_STORE, LocalCluster, run_within

from rocketstore.broker.groups import SubscriptionGroupConfig
from rocketstore.broker.schedule import SCHEDULE_TOPIC
from rocketstore.client import Producer, PullConsumer
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.send_back import resend_to_retry_topic
from rocketstore.message.message_id import decode_offset_message_id
from rocketstore.message.record import Message
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool
from rocketstore.store.config import StoreConfig
from rocketstore.store.message_store import MessageStore

TOPIC = "DelaySendBack"
TEST_TIMEOUT_S = 60.0


def test_a_send_back_for_a_group_the_broker_lacks_is_answered_in_4_9_3_words(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", auto_create_subscription_group=False) as cluster:
        cluster.create_topic(TOPIC)

        async def go() -> RemotingCommand:
            async with Producer(cluster.namesrv_addr, "hunt17-delay-producer") as producer:
                sent = await producer.send(TOPIC, b"back", queue_id=0)
            _, offset = decode_offset_message_id(sent.offset_msg_id)
            pool = ConnectionPool()
            try:
                ext = {"offset": str(offset), "group": "hunt17-nobody", "delayLevel": "0",
                       "originMsgId": sent.msg_id, "originTopic": TOPIC}
                return await pool.request(cluster.broker_addr,
                                          RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext), 5)
            finally:
                await pool.close()

        answer = run_within(go, TEST_TIMEOUT_S)
        assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert answer.remark == ("subscription group not exist, hunt17-nobody \n"
                                 "See http://rocketmq.apache.org/docs/faq/ for further details.")
        assert cluster.call(lambda: cluster.broker.topics.get("%RETRY%hunt17-nobody")) is None


def test_a_resend_to_the_retry_topic_keeps_its_reconsume_properties_in_the_record(tmp_path: Path) -> None:
    group = "hunt17-delay-resend"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)
        cluster.call(lambda: cluster.broker.groups.update(SubscriptionGroupConfig(group)))
        cluster.create_topic("%RETRY%" + group)

        async def go() -> None:
            async with Producer(cluster.namesrv_addr, "hunt17-delay-producer") as producer:
                sent = await producer.send(TOPIC, b"resent", queue_id=0)
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                [stored] = (await consumer.pull(sent.message_queue, 0, suspend_ms=5000)).messages
                message = ConsumedMessage.from_stored(stored, cluster.broker_name, group)
                # as the concurrent service's fallback: the count one up, the limit the consumer's (16)
                await resend_to_retry_topic(consumer, message, reconsume_times=1, max_reconsume_times=16)

        run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        # DELAY 3 (3 + reconsumeTimes 0): waiting in schedule queue 2 for its real topic
        [waiting] = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 2, 0, 8).messages)
        props = waiting.properties
        assert (waiting.body, waiting.reconsume_times) == (b"resent", 1)
        assert (props["REAL_TOPIC"], props["RETRY_TOPIC"], props["DELAY"]) == ("%RETRY%" + group, TOPIC, "3")
        assert (props["RECONSUME_TIME"], props["MAX_RECONSUME_TIMES"]) == ("1", "16")


def test_the_offset_of_a_level_no_longer_configured_is_kept_as_read(tmp_path: Path) -> None:
    """correctDelayOffset clamps the offsets of the levels configured only: an offset past its queue's end
    for a level the broker no longer has stays in the table (and in delayOffset.json) as it was."""
    store_dir = tmp_path / "store"
    config = StoreConfig(store_path_root_dir=str(store_dir), message_delay_level="1s 2s 3s 4s 5s",
                         **SMALL_STORE)
    with MessageStore.open(store_dir, config) as store:
        assert store.put(Message(TOPIC, b"level five", {"DELAY": "5"}, 0)).status.name == "PUT_OK"
        assert store.wait_dispatched(10)
        assert store.max_offset(SCHEDULE_TOPIC, 4) == 1
    path = store_dir / "config" / "delayOffset.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{\n\t"offsetTable":{5:7\n\t}\n}', encoding="utf-8")
    with LocalCluster(store_dir, store_overrides={"message_delay_level": "1s"}) as cluster:
        schedule = cluster.broker.schedule
        assert schedule is not None
        assert cluster.call(lambda: dict(schedule.offsets)) == {5: 7}
    assert path.read_text(encoding="utf-8") == '{\n\t"offsetTable":{5:7\n\t}\n}'


def test_a_resend_of_a_message_without_a_uniq_key_gets_one_as_in_java(tmp_path: Path) -> None:
    group = "hunt17-delay-resend-uniq"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)
        cluster.call(lambda: cluster.broker.groups.update(SubscriptionGroupConfig(group)))
        cluster.create_topic("%RETRY%" + group)
        # stored without a UNIQ_KEY, as a client that sets none (or an embedded put) leaves it
        put = cluster.call(lambda: cluster.broker.store.put(Message(TOPIC, b"no key", {"KEYS": "k"}, 0)))
        assert put.status.name == "PUT_OK"
        cluster.wait_dispatched()

        async def go() -> str:
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                [queue] = await consumer.queues(TOPIC)
                [stored] = (await consumer.pull(queue, 0, suspend_ms=5000)).messages
                assert "UNIQ_KEY" not in stored.properties
                message = ConsumedMessage.from_stored(stored, cluster.broker_name, group)
                await resend_to_retry_topic(consumer, message, reconsume_times=1, max_reconsume_times=16)
                return message.msg_id

        offset_msg_id = run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        [waiting] = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 2, 0, 8).messages)
        key = waiting.properties.get("UNIQ_KEY")
        assert waiting.body == b"no key" and key is not None and len(key) == 32 and key != offset_msg_id
        assert int(key, 16) >= 0


def test_a_retry_topic_send_for_a_group_the_broker_lacks_is_answered_in_4_9_3_words(tmp_path: Path) -> None:
    # the same remark from the send path (4.9.3's AbstractSendMessageProcessor / SendMessageProcessor
    # handleRetryAndDLQ): the group, a space, then FAQUrl.suggestTodo's text
    from rocketstore.message.properties import encode_properties
    from rocketstore.remoting.send_headers import SendMessageRequestHeader

    with LocalCluster(tmp_path / "store", auto_create_subscription_group=False) as cluster:
        cluster.create_topic("%RETRY%hunt17-nobody", 1)

        async def go() -> RemotingCommand:
            header = SendMessageRequestHeader(
                producer_group="hunt17-delay-producer", topic="%RETRY%hunt17-nobody", default_topic="TBW102",
                default_topic_queue_nums=4, queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000),
                flag=0, properties=encode_properties({"RETRY_TOPIC": TOPIC}), reconsume_times=1,
                unit_mode=False, batch=False)
            pool = ConnectionPool()
            try:
                return await pool.request(cluster.broker_addr, RemotingCommand.request(
                    RequestCode.SEND_MESSAGE_V2, header.to_ext_fields_v2(), b"again"), 5)
            finally:
                await pool.close()

        answer = run_within(go, TEST_TIMEOUT_S)
        assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert answer.remark == ("subscription group not exist, hunt17-nobody \n"
                                 "See http://rocketmq.apache.org/docs/faq/ for further details.")
