"""QUERY_CONSUME_QUEUE (321): raw consume queue entries, as ``mqadmin queryCq`` shows them (RocketMQ 4.9.3's
AdminBrokerProcessor.queryConsumeQueue).

Header topic, queueId, index, count and an optional consumerGroup.  The answer (QueryConsumeQueueResponseBody,
fastjson's field order) holds the queue's min and max index and up to *count* entries from *index*, each its
commitlog offset, size, tagsCode and ``eval``, never past the consume queue file that holds *index*; with a
group, its subscription to the topic (or "group@topic is not online!").  ``eval`` is always false: 4.9.3 asks
the group's ExpressionMessageFilter only about an entry whose tagsCode is a consume queue extension address
(at most Integer.MIN_VALUE - 1) and leaves it false on every other entry.  No such queue is SYSTEM_ERROR
"queueId@topic is not exist!"; an index outside the queue is SUCCESS with that remark and no body.  This
store keeps no consume queue extensions, so no entry has extendDataJson, bitMap or msg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import QueryConsumeQueueRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["register"]


def register(router: RequestRouter, broker: Broker) -> None:
    async def query_consume_queue(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumeQueueRequestHeader.from_ext_fields(request.ext_fields)
        store = broker.store
        entries = store.queue_entries(h.topic, h.queue_id, h.index, h.count)
        if entries is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"{h.queue_id}@{h.topic} is not exist!")
        body: dict[str, Any] = {}
        sub = broker.clients.subscription(h.consumer_group, h.topic) if h.consumer_group is not None else None
        if h.consumer_group is not None:
            body["filterData"] = (f"{h.consumer_group}@{h.topic} is not online!" if sub is None else "null")
        body["maxQueueIndex"] = store.max_offset(h.topic, h.queue_id)
        body["minQueueIndex"] = store.min_offset(h.topic, h.queue_id)
        if not entries:
            return request.make_response(ResponseCode.SUCCESS, remark=(
                f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!"))
        body["queueData"] = [{"eval": False, "physicOffset": o, "physicSize": s, "tagsCode": t} for o, s, t in entries]
        if sub is not None:
            body["subscriptionData"] = sub.to_json()
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    router.add(RequestCode.QUERY_CONSUME_QUEUE, query_consume_queue)
