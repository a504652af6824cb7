"""QUERY_CONSUME_QUEUE (321): raw consume queue entries, as ``mqadmin queryCq`` shows them (RocketMQ 4.9.3's
AdminBrokerProcessor.queryConsumeQueue).

Header topic, queueId, index, count and an optional consumerGroup.  The answer (QueryConsumeQueueResponseBody,
fastjson's field order) holds the queue's min and max index and up to *count* entries from *index*, each its
commitlog offset, size, tagsCode and ``eval`` (whether the online group's subscription passes the entry's tags
code), never past the consume queue file that holds *index*; with a group, its subscription to the topic (or
"group@topic is not online!").  No such queue is SYSTEM_ERROR
"queueId@topic is not exist!"; an index outside the queue is SUCCESS with that remark and no body.  This
store keeps no consume queue extensions, so no entry has extendDataJson, bitMap or msg.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import SubscriptionData
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
        matches = _entry_matcher(sub)
        body["queueData"] = [{"eval": matches(t), "physicOffset": o, "physicSize": s, "tagsCode": t}
                             for o, s, t in entries]
        if sub is not None:
            body["subscriptionData"] = sub.to_json()
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    router.add(RequestCode.QUERY_CONSUME_QUEUE, query_consume_queue)


def _entry_matcher(sub: SubscriptionData | None) -> Callable[[int], bool]:
    """Each entry's ``eval``: what 4.9.3's ExpressionMessageFilter.isMatchedByConsumeQueue says of its tags
    code for the group's subscription (False for all without an online group, which has no filter).  A TAG
    subscription matches "*" or a listed tag's hash; an SQL92 one matches every entry here (this store keeps
    no consume queue extension bit maps, so 4.9.3 decides only at the commitlog)."""
    if sub is None:
        return lambda code: False
    if sub.expression_type != "TAG" or sub.matches_all:
        return lambda code: True
    return sub.tag_codes().__contains__
