"""The group requests a client sends to brokers: HEART_BEAT, UNREGISTER_CLIENT,
GET_CONSUMER_LIST_BY_GROUP, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ and CHECK_CLIENT_CONFIG, with their JSON bodies.

Each function takes the connection pool and a broker address and raises BrokerError / RemotingError on
failure; what to do about a failure (retry at the next period) is the caller's business.  Loop-bound.
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketstore.client.route import MessageQueue, check
from rocketstore.errors import ProtocolError
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import HeartbeatData, SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketstore.remoting.transport import ConnectionPool

__all__ = ["check_client_config", "consumer_ids", "heartbeat", "lock_queues", "unlock_queues", "unregister"]


async def heartbeat(pool: ConnectionPool, addr: str, data: HeartbeatData, timeout_s: float) -> None:
    check(await pool.request(addr, RemotingCommand.request(RequestCode.HEART_BEAT, {}, data.encode()), timeout_s))


async def unregister(pool: ConnectionPool, addr: str, client_id: str, group: str, timeout_s: float, *,
                     producer: bool = False) -> None:
    """UNREGISTER_CLIENT of *client_id* from consumer *group* (*producer*: from producer *group*)."""
    header = (UnregisterClientRequestHeader(client_id=client_id, producer_group=group) if producer
              else UnregisterClientRequestHeader(client_id=client_id, consumer_group=group))
    check(await pool.request(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.to_ext_fields()),
                             timeout_s))


async def consumer_ids(pool: ConnectionPool, addr: str, group: str, timeout_s: float) -> list[str]:
    """The group's client ids as the broker knows them; [] when it knows none (its SYSTEM_ERROR)."""
    ext = GetConsumerListByGroupRequestHeader(consumer_group=group).to_ext_fields()
    response = await pool.request(addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext),
                                  timeout_s)
    if response.code == ResponseCode.SYSTEM_ERROR:
        return []
    obj = fastjson.loads(check(response).body or b"{}")
    ids = obj.get("consumerIdList") if isinstance(obj, dict) else None
    if not isinstance(ids, list):
        raise ProtocolError("consumer list body without consumerIdList")
    return [str(i) for i in ids]


def _mq_json(mq: MessageQueue) -> dict[str, object]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def _mq_set_body(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> bytes:
    return fastjson.dumps({"clientId": client_id, "consumerGroup": group,
                           "mqSet": [_mq_json(mq) for mq in sorted(mqs)]})


async def lock_queues(pool: ConnectionPool, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue],
                      timeout_s: float) -> set[MessageQueue]:
    """LOCK_BATCH_MQ: the queues the broker granted (or renewed) to *client_id*."""
    request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, _mq_set_body(group, client_id, mqs))
    obj = fastjson.loads(check(await pool.request(addr, request, timeout_s)).body or b"{}")
    granted = obj.get("lockOKMQSet") if isinstance(obj, dict) else None
    if not isinstance(granted, list):
        raise ProtocolError("lock answer without lockOKMQSet")
    result = set()
    for entry in granted:
        if isinstance(entry, dict):
            try:
                result.add(MessageQueue(str(entry["topic"]), str(entry["brokerName"]), int(entry["queueId"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise ProtocolError(f"bad queue in lockOKMQSet: {entry!r}") from exc
    return result


async def unlock_queues(pool: ConnectionPool, addr: str, group: str, client_id: str,
                        mqs: Iterable[MessageQueue], timeout_s: float) -> None:
    request = RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, {}, _mq_set_body(group, client_id, mqs))
    check(await pool.request(addr, request, timeout_s))


async def check_client_config(pool: ConnectionPool, addr: str, group: str, client_id: str, sub: SubscriptionData,
                              timeout_s: float) -> None:
    """CHECK_CLIENT_CONFIG: the broker compiles a non-TAG subscription's expression and answers whether it
    can filter by it (Java's checkClientInBroker, before a push consumer starts); BrokerError if not."""
    body = fastjson.dumps({"clientId": client_id, "group": group, "subscriptionData": sub.to_json()})
    check(await pool.request(addr, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, body), timeout_s))
