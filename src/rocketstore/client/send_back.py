"""Giving a consumed message back for a later retry, the two ways a RocketMQ push consumer does it.

* :func:`send_back`: CONSUMER_SEND_MSG_BACK to the broker the message came from, naming the message by its
  commitlog offset; the broker writes it to ``%RETRY%<group>`` with delay level ``3 + reconsumeTimes``
  (delay level 0) or to ``%DLQ%<group>`` once it was retried ``max_reconsume_times`` times.
* :func:`resend_to_retry_topic`: a new message sent to ``%RETRY%<group>`` with the body and properties of
  the consumed one, RETRY_TOPIC / ORIGIN_MESSAGE_ID set, and ``reconsumeTimes`` / ``maxReconsumeTimes`` in
  the send header (and, as 4.9.3's, as RECONSUME_TIME / MAX_RECONSUME_TIMES properties), so the broker's
  send path redirects it to the DLQ past the limit; one without a UNIQ_KEY gets a new one, as the Java
  producer's send gives it, and a body of 4 KiB or more goes out compressed, as that producer sends it.
  Java uses it when send-back fails, and orderly consumption uses it for messages over the limit.

Loop-bound.
"""

from __future__ import annotations

import time
import zlib

from rocketstore.client.consumer import PullConsumer
from rocketstore.client.errors import NoRouteError
from rocketstore.client.outgoing_message import DEFAULT_COMPRESS_LEVEL, DEFAULT_COMPRESS_OVER, new_uniq_key
from rocketstore.client.push_types import ConsumedMessage, retry_topic
from rocketstore.client.route import (
    AUTO_CREATE_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    MessageQueue,
    RouteCache,
    check,
)
from rocketstore.message.properties import PropertyName, encode_properties
from rocketstore.message.record import SysFlag
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import ConsumerSendMsgBackRequestHeader
from rocketstore.remoting.send_headers import SendMessageRequestHeader

__all__ = ["resend_to_retry_topic", "send_back"]

#: MessageConst.PROPERTY_TRANSACTION_PREPARED, which Java clears on a resend
_TRAN_PREPARED = "TRAN_MSG"
#: the bound of a push consumer's CONSUMER_SEND_MSG_BACK: 4.9.3's DefaultMQPushConsumerImpl.sendMessageBack
#: gives it a fixed 5 s (a resend after it failed is its inner producer's send, bounded by ``timeout_s``)
SEND_BACK_TIMEOUT_S = 5.0


async def send_back(consumer: PullConsumer, message: ConsumedMessage, *, delay_level: int,
                    max_reconsume_times: int) -> None:
    """CONSUMER_SEND_MSG_BACK for *message*; raises BrokerError / RemotingError / NoRouteError."""
    header = ConsumerSendMsgBackRequestHeader(
        commit_log_offset=message.commit_log_offset, group=consumer.group, delay_level=delay_level,
        origin_msg_id=message.msg_id, origin_topic=message.topic, max_reconsume_times=max_reconsume_times)
    addr = await consumer.routes.broker_addr(MessageQueue(message.stored_topic, message.broker_name,
                                                          message.queue_id))
    request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
    check(await consumer.pool.request(addr, request, SEND_BACK_TIMEOUT_S))


async def resend_to_retry_topic(consumer: PullConsumer, message: ConsumedMessage, *, reconsume_times: int,
                                max_reconsume_times: int) -> None:
    """Send a copy of *message* to ``%RETRY%<group>`` (delay level ``3 + message.reconsume_times``)."""
    topic = retry_topic(consumer.group)
    props: dict[str, str | None] = dict(message.properties)
    props[PropertyName.RETRY_TOPIC] = message.topic
    if not props.get(PropertyName.ORIGIN_MESSAGE_ID):
        props[PropertyName.ORIGIN_MESSAGE_ID] = message.msg_id
    # as 4.9.3's resends (setReconsumeTime / setMaxReconsumeTimes): its producer reads both into the request
    # header but only after it has written the properties string, so the stored record keeps them too
    props[PropertyName.RECONSUME_TIME] = str(reconsume_times)
    props[PropertyName.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props[PropertyName.DELAY] = str(3 + message.reconsume_times)
    props.pop(_TRAN_PREPARED, None)
    if props.get(PropertyName.UNIQ_KEY) is None:  # Java's producer: MessageClientIDSetter.setUniqID
        props[PropertyName.UNIQ_KEY] = new_uniq_key()
    props.setdefault(PropertyName.WAIT, "true")
    route, _ = await consumer.routes.publish_route(topic)
    queues = RouteCache.publish_queues(topic, route)
    if not queues:
        raise NoRouteError(topic, "no writeable queue")
    # the broker the message came from holds the group's retry topic for it; any other will do
    mq = next((q for q in queues if q.broker_name == message.broker_name), queues[0])
    body, sys_flag = message.body, 0
    # compressed as the Java client's inner producer sends it (the consumer got the body inflated)
    if len(body) >= DEFAULT_COMPRESS_OVER:
        body, sys_flag = zlib.compress(body, DEFAULT_COMPRESS_LEVEL), int(SysFlag.COMPRESSED)
    header = SendMessageRequestHeader(
        producer_group=consumer.group, topic=topic, default_topic=AUTO_CREATE_TOPIC,
        default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS, queue_id=mq.queue_id, sys_flag=sys_flag,
        born_timestamp=int(time.time() * 1000), flag=message.flag, properties=encode_properties(props),
        reconsume_times=reconsume_times, unit_mode=False, max_reconsume_times=max_reconsume_times)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields_v2(), body)
    bd = route.broker(mq.broker_name)
    addr = bd.master_addr() if bd is not None else None
    if addr is None:
        raise NoRouteError(topic, f"broker {mq.broker_name} has no master")
    check(await consumer.pool.request(addr, request, consumer.timeout_s))
