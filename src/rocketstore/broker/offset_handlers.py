"""Offset requests: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET (30),
GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32),
GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45).

QUERY_CONSUMER_OFFSET keeps RocketMQ's quirk: a group with no committed offset gets 0 (SUCCESS) while the
queue's first message is still "hot" (not beyond the in-memory share of the commitlog), so brand-new groups
start at the beginning; otherwise QUERY_NOT_FOUND and the client decides (usually the max offset).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketstore.broker.schedule import encode_delay_offsets
from rocketstore.broker.topics import group_problem, topic_problem
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker
    from rocketstore.broker.offsets import ConsumerOffsetTable

__all__ = ["first_message_in_disk", "register"]


def first_message_in_disk(broker: Broker, topic: str, queue_id: int) -> bool:
    """checkInDiskByConsumeOffset(topic, queueId, 0): is entry 0's record beyond the hot (in-memory) share?
    Read from the consume queue entry, as 4.9.3 does, not from the record (which retention may be removing)."""
    entries = broker.store.queue_entries(topic, queue_id, 0, 1)
    return entries is not None and len(entries) > 0 and broker.store.in_disk(entries[0][0])


def _all_offsets_body(offsets: ConsumerOffsetTable) -> bytes:
    """GET_ALL_CONSUMER_OFFSET's ConsumerOffsetSerializeWrapper (thread-safe: the table copies under its lock)."""
    return fastjson.dumps({"offsetTable": offsets.all_json()})


def register(router: RequestRouter, broker: Broker) -> None:
    async def query_consumer_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        problem = group_problem(h.consumer_group) or topic_problem(h.topic)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        offset = broker.offsets.query(h.consumer_group, h.topic, h.queue_id)
        if offset < 0:
            min_offset = broker.store.min_offset(h.topic, h.queue_id)
            if min_offset <= 0 and not first_message_in_disk(broker, h.topic, h.queue_id):
                offset = 0
            else:
                return request.make_response(ResponseCode.QUERY_NOT_FOUND,
                                             remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=QueryConsumerOffsetResponseHeader(offset=offset).to_ext_fields())

    async def update_consumer_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        # the offset table is persisted as "topic@group" keys: only valid names get in
        problem = group_problem(h.consumer_group) or topic_problem(h.topic)
        if problem is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        if h.queue_id < 0:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"queueId[{h.queue_id}] is illegal")
        broker.offsets.commit(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return request.make_response(ResponseCode.SUCCESS)

    async def max_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = broker.store.max_offset(h.topic, h.queue_id)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=GetMaxOffsetResponseHeader(offset=offset).to_ext_fields())

    async def min_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetMinOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = broker.store.min_offset(h.topic, h.queue_id)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=GetMinOffsetResponseHeader(offset=offset).to_ext_fields())

    async def search_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = broker.store.offset_by_time(h.topic, h.queue_id, h.timestamp_ms)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=SearchOffsetResponseHeader(offset=offset).to_ext_fields())

    async def earliest_time(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetEarliestMsgStoretimeRequestHeader.from_ext_fields(request.ext_fields)
        ts = broker.store.earliest_message_time(h.topic, h.queue_id)
        return request.make_response(ResponseCode.SUCCESS,
                                     ext_fields=GetEarliestMsgStoretimeResponseHeader(timestamp_ms=ts).to_ext_fields())

    async def all_consumer_offsets(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        # copied (under the table's lock) and encoded on the executor: 10,000 queues are ~25 ms of JSON
        body = await broker.run_blocking(_all_offsets_body, broker.offsets)
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def all_delay_offsets(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        if broker.schedule is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark="No delay offset in this broker")
        return request.make_response(ResponseCode.SUCCESS,
                                     body=encode_delay_offsets(broker.schedule.offsets, pretty=False).encode())

    router.add(RequestCode.QUERY_CONSUMER_OFFSET, query_consumer_offset)
    router.add(RequestCode.UPDATE_CONSUMER_OFFSET, update_consumer_offset)
    router.add(RequestCode.GET_MAX_OFFSET, max_offset)
    router.add(RequestCode.GET_MIN_OFFSET, min_offset)
    router.add(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search_offset)
    router.add(RequestCode.GET_EARLIEST_MSG_STORETIME, earliest_time)
    router.add(RequestCode.GET_ALL_CONSUMER_OFFSET, all_consumer_offsets)
    router.add(RequestCode.GET_ALL_DELAY_OFFSET, all_delay_offsets)
