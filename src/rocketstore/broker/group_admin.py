"""The remaining group, offset and clean-up requests of RocketMQ 4.9.3's AdminBrokerProcessor:

* INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, ``mqadmin getConsumerStatus``): the broker asks each connected
  consumer of the group (or only the one whose client id the header's ``clientAddr`` names) for its offsets
  of the topic with GET_CONSUMER_STATUS_FROM_CLIENT (221) and answers a GetConsumerStatusBody whose
  consumerTable maps each client id that answered to its table, as Broker2Client.getConsumeStatus does: no
  consumer online is SYSTEM_ERROR "No Any Consumer online in the consumer group: [g]", one older than
  V3_0_7_SNAPSHOT SYSTEM_ERROR "the client does not support this feature. version=<name>"; a consumer that
  answers with an error, answers nothing within 5 s or whose answer cannot be read is left out (the C++
  clients never answer 221).  The consumers are asked at once, not one after the other.
* QUERY_CONSUME_TIME_SPAN (303): per write queue of the topic, the store times of its oldest and newest
  message, of the message before the group's offset (the oldest when the group has none) and how long the
  message at the group's offset has waited (now minus its store time; 0 when the group is at the end).
  4.9.3's arithmetic is kept: a group without an offset there gets now + 1 ms as its delay, since the
  store time of "offset -1" is -1.  An unknown topic is TOPIC_NOT_EXIST "topic[t] not exist".
* QUERY_CORRECTION_OFFSET (308): per queue, the smallest offset of every group of the topic but those in
  ``filterGroups`` (offsets of deleted messages not counted), replaced by Long.MAX_VALUE where even that is
  ahead of ``compareGroup``'s offset.  4.9.3 deletes the filtered groups' offsets from its table while it
  filters (so a compare group named among them is compared with nothing, and is gone afterwards); here
  nothing is deleted, and a compare group among the filtered ones is likewise not compared.  A queue the
  compare group has but no other group has is left out (4.9.3 fails the request with a
  NullPointerException there).
* CLONE_GROUP_OFFSET (314, ``mqadmin cloneGroupOffset``): the source group's offsets of the topic (of
  every topic it has offsets of, when no topic is given) are copied to the destination group, replacing its
  own; topics the topic table lacks are skipped, and unless ``offline`` so is a topic the source group,
  while online with subscriptions, does not subscribe to.  As in 4.9.3 the destination group's
  subscription config is not created.  4.9.3 copies only the header's topic even when it has none (so
  "every topic" copies nothing); here every topic of the source group is copied.
* CLEAN_EXPIRED_CONSUMEQUEUE (306) and CLEAN_UNUSED_TOPIC (316): the store's cleanExpiredConsumerQueue and
  cleanUnusedTopic (the topic table's topics are the live ones); see
  :mod:`rocketstore.store.queue_cleanup`.  Both answer SUCCESS; the body, which 4.9.3 leaves empty and
  its clients ignore, lists the queues dropped (``{"dropped":[{"topic","queueId"},...]}``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketstore.broker.topics import group_problem, topic_problem
from rocketstore.errors import RemotingError, StoreError
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import MQVersion, RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.consumer_bodies import (
    GetConsumerStatusBody,
    QueueKey,
    QueueTimeSpan,
    encode_consume_time_span_body,
    encode_correction_offset_body,
)
from rocketstore.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    GetConsumerStatusRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.remoting.versions import get_version_desc

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker
    from rocketstore.broker.clients import ClientChannel

__all__ = ["CONSUMER_STATUS_TIMEOUT_S", "LiveTopics", "register"]

log = logging.getLogger(__name__)

#: how long the broker waits for each consumer's GET_CONSUMER_STATUS_FROM_CLIENT answer (4.9.3: 5000 ms)
CONSUMER_STATUS_TIMEOUT_S = 5.0
_LONG_MAX = (1 << 63) - 1


class LiveTopics:
    """The broker's topic table as the store's clean-up asks it, from the store's thread: a topic created
    while the clean-up runs is seen (a dict look-up is atomic)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def __contains__(self, topic: object) -> bool:
        return isinstance(topic, str) and self._broker.topics.get(topic) is not None


def register(router: RequestRouter, broker: Broker) -> None:
    async def consumer_status(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        log.info("[get-consumer-status] asked by %s: topic=%s group=%s client=%s", conn.peer_address, h.topic,
                 h.group, h.client_addr)
        info = broker.clients.group(h.group)
        channels = list(info.channels.values()) if info is not None else []
        if not channels:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"No Any Consumer online in the consumer group: [{h.group}]")
        if h.client_addr and h.client_addr.strip():
            channels = [c for c in channels if c.client_id == h.client_addr][:1]
        old = next((c for c in channels if c.version < MQVersion.V3_0_7_SNAPSHOT), None)
        if old is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=("the client does not support this feature. version="
                                                 f"{get_version_desc(old.version)}"))
        ext = GetConsumerStatusRequestHeader(topic=h.topic, group=h.group).to_ext_fields()
        answers = await asyncio.gather(*(_ask_status(c, ext, h.topic, h.group) for c in channels))
        table = {c.client_id: answer for c, answer in zip(channels, answers, strict=True) if answer is not None}
        return request.make_response(ResponseCode.SUCCESS, body=GetConsumerStatusBody(consumer_table=table).encode())

    async def consume_time_span(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumeTimeSpanRequestHeader.from_ext_fields(request.ext_fields)
        tc = broker.topics.get(h.topic)
        if tc is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{h.topic}] not exist")
        store, name = broker.store, broker.config.broker_name
        spans = []
        for queue_id in range(tc.write_queue_nums):
            min_time = store.earliest_message_time(h.topic, queue_id)
            max_offset = store.max_offset(h.topic, queue_id)
            max_time = store.store_time(h.topic, queue_id, max_offset - 1)
            offset = broker.offsets.query(h.group, h.topic, queue_id)
            consume_time = store.store_time(h.topic, queue_id, offset - 1) if offset > 0 else min_time
            delay = 0
            if offset < max_offset:
                delay = int(time.time() * 1000) - store.store_time(h.topic, queue_id, offset)
            spans.append(QueueTimeSpan((h.topic, name, queue_id), min_time, max_time, consume_time, delay))
        return request.make_response(ResponseCode.SUCCESS, body=encode_consume_time_span_body(spans))

    async def correction_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryCorrectionOffsetHeader.from_ext_fields(request.ext_fields)
        filtered = {g for g in (h.filter_groups or "").split(",") if g} if (h.filter_groups or "").strip() else set()
        store = broker.store
        offsets = broker.offsets.min_over_groups(h.topic, filtered,
                                                 lambda queue_id: store.min_offset(h.topic, queue_id))
        if h.compare_group not in filtered:
            for queue_id, compare in broker.offsets.offsets(h.compare_group, h.topic).items():
                least = offsets.get(queue_id)
                if least is not None and least > compare:
                    offsets[queue_id] = _LONG_MAX
        return request.make_response(ResponseCode.SUCCESS, body=encode_correction_offset_body(offsets))

    async def clone_group_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = CloneGroupOffsetRequestHeader.from_ext_fields(request.ext_fields)
        problem = group_problem(h.src_group) or group_problem(h.dest_group)
        if h.topic and h.topic.strip():
            problem = problem or topic_problem(h.topic)
            topics = [h.topic]
        else:
            topics = broker.offsets.topics_of_group(h.src_group)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        info = broker.clients.group(h.src_group)
        cloned = []
        for topic in topics:
            if broker.topics.get(topic) is None:
                log.warning("[cloneGroupOffset] topic config not exist, %s", topic)
                continue
            if not h.offline and info is not None and info.subscriptions and topic not in info.subscriptions:
                log.warning("[cloneGroupOffset] the consumer group[%s], topic[%s] not exist", h.src_group, topic)
                continue
            if broker.offsets.clone(h.src_group, h.dest_group, topic):
                cloned.append(topic)
        log.info("[cloneGroupOffset] %s -> %s: %s", h.src_group, h.dest_group, cloned)
        return request.make_response(ResponseCode.SUCCESS)

    async def clean_expired_consume_queues(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        log.warning("invoke cleanExpiredConsumeQueue by %s", conn.peer_address)
        return await _clean(request, broker.store.clean_expired_consume_queues)

    async def clean_unused_topics(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        log.warning("invoke cleanUnusedTopic by %s", conn.peer_address)
        return await _clean(request, broker.store.clean_unused_topics, LiveTopics(broker), unused=True)

    async def _clean(request: RemotingCommand, fn: object, *args: object,
                     unused: bool = False) -> RemotingCommand:
        """*unused*: the topics dropped are no longer in the topic table, and their statistics go with them
        when autoDeleteUnusedStats (4.9.3's cleanUnusedTopic); an expired queue's topic keeps its own."""
        try:
            dropped: list[tuple[str, int]] = await broker.run_blocking(fn, *args)
        except StoreError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        if unused:
            broker.forget_stats_of_topics(topic for topic, _ in dropped)
        body = fastjson.dumps({"dropped": [{"queueId": q, "topic": t} for t, q in dropped]})
        return request.make_response(ResponseCode.SUCCESS, body=body)

    router.add(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, consumer_status)
    router.add(RequestCode.QUERY_CONSUME_TIME_SPAN, consume_time_span)
    router.add(RequestCode.QUERY_CORRECTION_OFFSET, correction_offset)
    router.add(RequestCode.CLONE_GROUP_OFFSET, clone_group_offset)
    router.add(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, clean_expired_consume_queues)
    router.add(RequestCode.CLEAN_UNUSED_TOPIC, clean_unused_topics)


async def _ask_status(channel: ClientChannel, ext: dict[str, str], topic: str,
                      group: str) -> dict[QueueKey, int] | None:
    """One consumer's GET_CONSUMER_STATUS_FROM_CLIENT answer (its messageQueueTable), or None when it does
    not give one."""
    connection = channel.connection
    if not isinstance(connection, Connection) or connection.is_closed:
        return None
    command = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, dict(ext))
    try:
        response = await connection.request(command, CONSUMER_STATUS_TIMEOUT_S)
    except RemotingError as exc:
        log.error("[get-consumer-status] topic=%s group=%s client=%s: %s", topic, group, channel.client_id, exc)
        return None
    if response.code != ResponseCode.SUCCESS or not response.body:
        log.info("[get-consumer-status] client %s answered %d %s", channel.client_id, response.code, response.remark)
        return None
    try:
        return GetConsumerStatusBody.decode(response.body).message_queue_table
    except RemotingError as exc:
        log.error("[get-consumer-status] unreadable answer of client %s: %s", channel.client_id, exc)
        return None
