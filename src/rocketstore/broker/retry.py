"""CONSUMER_SEND_MSG_BACK (36): a consumer gives a message back for a later retry.

As the 4.9.3 SendMessageProcessor does (remoting.md 5.10): the message read back by its commitlog offset is
written again to ``%RETRY%<group>`` with a delay level (0 means 3 + reconsumeTimes) so it goes through
SCHEDULE_TOPIC_XXXX and comes back later, or to ``%DLQ%<group>`` once it has been retried maxReconsumeTimes
(16, or the request's value from clients of version >= V3_4_9) or when the level is negative (stored at once
with DELAY=0, whatever the perm of an existing ``%DLQ%`` topic).  The new record
keeps body, flag, sysFlag, born time/host and properties, adds RETRY_TOPIC (the original topic), WAIT=false and
ORIGIN_MESSAGE_ID, and counts one more reconsume.  A stored one counts in SNDBCK_PUT_NUMS under
``<RETRY_TOPIC>@<group>`` (broker_stats.py).  A ``%RETRY%`` / ``%DLQ%`` topic the send-back creates is
registered with the name servers at once, and the send-back answered once they route it.

The retry queue is picked among the first retryQueueNums queues of the ``%RETRY%`` topic that consumers
read: within min(writeQueueNums, readQueueNums), within readQueueNums when an admin left the topic no write
queue.  A topic left with no read queue refuses the retry (SYSTEM_ERROR; the client keeps the message), a
dead letter still goes to ``%DLQ%``.  4.9.3 picks from retryQueueNums alone, whatever the topic's queues,
and answers SUCCESS for a retry stored in a queue no consumer pulls (checked against 4.9.3's broker: a
topic edited to 1 read and 4 write queues got 3 of 4 retries past its read queue, one of 0 read queues all).
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from rocketstore.broker.query import damaged_remark
from rocketstore.broker.topics import dlq_topic, group_problem, retry_topic
from rocketstore.errors import MessageDecodeError
from rocketstore.message.java_text import java_is_blank
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message
from rocketstore.remoting.bodies import DataVersion, Perm
from rocketstore.remoting.codes import MQVersion, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import MAX_QUEUE_NUMS, ConsumerSendMsgBackRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.store.results import PutMessageStatus

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["register", "register_created", "routed"]

_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: how long a send-back that created its %RETRY% / %DLQ% topic waits at most for the name servers to route
#: it: within the 3 s (pull consumer) and 5 s (push consumer, which then sends the message again through its
#: producer) 4.9.3's clients give a send-back, so that name servers that do not answer cannot make it store
#: the message twice
_REGISTRATION_WAIT_S = 2.0


def register(router: RequestRouter, broker: Broker) -> None:
    async def send_back(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields)
        changes = broker.config_changes()

        def fail(code: int, remark: str) -> RemotingCommand:
            return request.make_response(code, remark=remark)

        problem = group_problem(h.group)
        if problem is not None:
            return fail(ResponseCode.SYSTEM_ERROR, problem)
        # findSubscriptionGroupConfig: a group not seen yet is created when autoCreateSubscriptionGroup is on
        group_cfg = broker.groups.find_or_create(h.group)
        if group_cfg is None:
            # (4.9.3: the group, a space, then FAQUrl.suggestTodo's text, which starts with a new line)
            return fail(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                        f"subscription group not exist, {h.group} {_FAQ}")
        if not Perm.writeable(broker.config.broker_permission):
            return fail(ResponseCode.NO_PERMISSION,
                        f"the broker[{broker.config.advertised_ip()}] sending message is forbidden")
        if group_cfg.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)

        topic = retry_topic(h.group)
        tc = broker.topics.get(topic)
        #: the registrations of the topics this send-back created: answered once the name servers route them
        registering: list[asyncio.Task[None]] = []
        if tc is None:
            before = broker.topics.data_version
            tc = broker.topics.create_retry_or_dlq(topic, group_cfg.retry_queue_nums, Perm.READ | Perm.WRITE,
                                                   2 if h.unit_mode else 0)
            register_created(broker, topic, before, registering)
        if not Perm.writeable(tc.perm):
            return fail(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        # within the queues the retry topic has (at most MAX_QUEUE_NUMS, whatever retryQueueNums says): a queue
        # past them would hold the message where no consumer pulls.  4.9.3 picks from the group's count alone,
        # so once retryQueueNums was raised on a group whose retry topic existed, most retries were stranded.
        # Consumers pull the read queues only: within min(write, read), or within the read queues when an
        # admin left the topic no write queue; none to read is refused (4.9.3 stores it there, unread)
        queue_nums = min(group_cfg.retry_queue_nums, MAX_QUEUE_NUMS)
        read_nums = tc.read_queue_nums
        usable = min(tc.write_queue_nums, read_nums) if tc.write_queue_nums > 0 else read_nums
        if usable < queue_nums:
            queue_nums = usable
        queue_id = random.randrange(queue_nums) if queue_nums > 0 else -1  # -1: no queue that is read

        try:
            original = broker.store.message_at(h.commit_log_offset)
        except MessageDecodeError as exc:  # not sent back: the client keeps the message it holds
            return fail(ResponseCode.SYSTEM_ERROR, damaged_remark(exc))
        if original is None:
            return fail(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.commit_log_offset}")
        props = original.properties
        props.setdefault(PropertyName.RETRY_TOPIC, original.topic)
        # msgExt.setWaitStoreMsgOK(false): stored with WAIT=false, and the put waits neither for the disk nor
        # for a SYNC_MASTER's slave (without one, a failed send-back would make the client store it again)
        props[PropertyName.WAIT] = "false"

        max_reconsume = group_cfg.retry_max_times
        if request.version >= MQVersion.V3_4_9 and h.max_reconsume_times is not None:
            max_reconsume = h.max_reconsume_times
        delay_level = h.delay_level
        # setDelayTimeLevel: DELAY is set in place (a DELAY the record kept from its last trip through
        # SCHEDULE_TOPIC_XXXX keeps its position among the properties), to 0 for a dead letter
        if original.reconsume_times >= max_reconsume or delay_level < 0:
            topic = dlq_topic(h.group)
            queue_id = 0
            if broker.topics.get(topic) is None:
                before = broker.topics.data_version
                broker.topics.create_retry_or_dlq(topic, 1, Perm.READ | Perm.WRITE)
                register_created(broker, topic, before, registering)
            # as 4.9.3, the perm of an existing %DLQ% topic is not checked (only the %RETRY% topic's is)
            props[PropertyName.DELAY] = "0"
        else:
            if queue_id < 0:  # not stored: the client keeps the message (and tries it again)
                return fail(ResponseCode.SYSTEM_ERROR,
                            f"the topic[{topic}] has no read queue: no consumer would ever get the retry")
            if delay_level == 0:
                delay_level = 3 + original.reconsume_times
            props[PropertyName.DELAY] = str(delay_level)
        if java_is_blank(props.get(PropertyName.ORIGIN_MESSAGE_ID)):  # UtilAll.isBlank, as 4.9.3
            props[PropertyName.ORIGIN_MESSAGE_ID] = original.msg_id
        message = Message(topic, original.body, props, queue_id, original.flag, original.sys_flag,
                          original.born_timestamp, original.born_host, original.store_host,
                          original.reconsume_times + 1)
        result = await broker.put(message)
        if registering:
            # 4.9.3's createTopicInSendMessageBackMethod registers a topic it created before the send-back
            # goes on (registerBrokerAll): a consumer reading the %DLQ% (or %RETRY%) route once answered finds
            # it.  Registered beside the put, waited for here; a send-back that created nothing waits for
            # nothing
            await routed(registering)
        if result.status is PutMessageStatus.PUT_OK:
            broker.stats.sent_back(h.group, props[PropertyName.RETRY_TOPIC], result.topic, result.wrote_bytes)
            if broker.config_changes() != changes:
                await broker.config_written_quietly()  # the %RETRY% / %DLQ% topic (or group) it created, on disk
            return request.make_response(ResponseCode.SUCCESS)
        return fail(ResponseCode.SYSTEM_ERROR, result.status.name)

    router.add(RequestCode.CONSUMER_SEND_MSG_BACK, send_back)


def register_created(broker: Broker, topic: str, before: DataVersion,
                     registering: list[asyncio.Task[None]]) -> None:
    """Register *topic*, a ``%RETRY%`` / ``%DLQ%`` topic just created (the table was at data version
    *before*), with the name servers at once; the registration goes into *registering*, for :func:`routed`.
    Used by the send-back and by a send to ``%RETRY%`` that turns into a dead letter (send.py)."""
    registered = broker.topic_config_changed(topic, before)
    if registered is not None:
        registering.append(registered)


async def routed(registering: list[asyncio.Task[None]]) -> None:
    """Wait until the name servers route the topics of *registering* (:func:`register_created`), at most
    ``_REGISTRATION_WAIT_S``."""
    if registering:
        await asyncio.wait(registering, timeout=_REGISTRATION_WAIT_S)
