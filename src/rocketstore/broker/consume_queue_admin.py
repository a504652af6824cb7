"""QUERY_CONSUME_QUEUE (321): raw consume queue entries, as ``mqadmin queryCq`` shows them (RocketMQ 4.9.3's
AdminBrokerProcessor.queryConsumeQueue).

Header topic, queueId, index, count and an optional consumerGroup.  The answer (QueryConsumeQueueResponseBody,
fastjson's field order) holds the queue's min and max index and up to *count* entries from *index*, each its
commitlog offset, size, tagsCode and ``eval``, never past the consume queue file that holds *index*; with a
group, its subscription to the topic and filterData (or "group@topic is not online!"): for an SQL92
subscription that compiles, 4.9.3's ConsumerFilterData as fastjson's pretty text (broker.filter_data), else
"null".  ``eval`` is always false: 4.9.3 asks
the group's ExpressionMessageFilter only about an entry whose tagsCode is a consume queue extension address
(at most Integer.MIN_VALUE - 1) and leaves it false on every other entry.  No such queue is SYSTEM_ERROR
"queueId@topic is not exist!" (a master's SCHEDULE_TOPIC_XXXX has a queue for every delay level, as 4.9.3's
delay timers open them); an index outside the queue is SUCCESS with that remark and no body.  This
store keeps no consume queue extensions, so no entry has extendDataJson, bitMap or msg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketstore.broker.filter_data import bloom_bits, filter_data_text
from rocketstore.message.sql_filter import SqlSyntaxError, compile_sql
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import QueryConsumeQueueRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection
from rocketstore.store.dispatch import SCHEDULE_TOPIC

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["register"]


def _filter_data(broker: Broker, group: str, sub: SubscriptionData) -> str:
    """4.9.3's filterData of an online group: its ConsumerFilterData as fastjson's pretty text for an
    SQL92 expression that compiles, else fastjson's text of null."""
    info = broker.clients.group(group)
    born_ms = info.filter_born_ms.get(sub.topic) if info is not None else None
    if sub.expression_type != "SQL92" or not sub.sub_string or born_ms is None:
        return "null"
    try:
        compile_sql(sub.sub_string)
    except SqlSyntaxError:
        return "null"  # 4.9.3 builds no filter data for an expression that does not compile
    kept = broker.extra_properties
    bloom = bloom_bits(f"{group}#{sub.topic}", _kept_int(kept, "maxErrorRateOfBloomFilter", 20),
                       _kept_int(kept, "expectConsumerNumUseFilter", 32))
    return filter_data_text(group, sub.topic, sub.sub_string, sub.expression_type, born_ms, sub.sub_version, bloom)


def _kept_int(kept: dict[str, str], name: str, default: int) -> int:
    try:
        return int(kept.get(name, default))
    except ValueError:
        return default


def _delay_queue_open(broker: Broker, queue_id: int) -> bool:
    schedule = broker.schedule
    return schedule is not None and schedule.started and queue_id + 1 in schedule.levels


def register(router: RequestRouter, broker: Broker) -> None:
    async def query_consume_queue(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumeQueueRequestHeader.from_ext_fields(request.ext_fields)
        store = broker.store
        entries = store.queue_entries(h.topic, h.queue_id, h.index, h.count)
        if entries is None and h.topic == SCHEDULE_TOPIC and _delay_queue_open(broker, h.queue_id):
            # 4.9.3's delay timers open the consume queue of every level when they first run: an empty
            # level's queue exists there, so its index is "not exist", not the queue
            entries = []
        if entries is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{h.queue_id}@{h.topic} is not exist!")
        body: dict[str, Any] = {}
        sub = broker.clients.subscription(h.consumer_group, h.topic) if h.consumer_group is not None else None
        if h.consumer_group is not None:
            body["filterData"] = (f"{h.consumer_group}@{h.topic} is not online!" if sub is None
                                  else _filter_data(broker, h.consumer_group, sub))
        body["maxQueueIndex"] = store.max_offset(h.topic, h.queue_id)
        body["minQueueIndex"] = store.min_offset(h.topic, h.queue_id)
        # a count of 0 (or less) reads no entry of an index that exists: 4.9.3 answers the body, queueData empty
        if not entries and not (h.count <= 0 and body["minQueueIndex"] <= h.index < body["maxQueueIndex"]):
            return request.make_response(ResponseCode.SUCCESS, remark=(
                f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!"))
        body["queueData"] = [{"eval": False, "physicOffset": o, "physicSize": s, "tagsCode": t} for o, s, t in entries]
        if sub is not None:
            body["subscriptionData"] = sub.to_json()
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    router.add(RequestCode.QUERY_CONSUME_QUEUE, query_consume_queue)
