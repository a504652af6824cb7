"""Client management requests: HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
CHECK_CLIENT_CONFIG (46), LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42).

A consumer heartbeat auto-creates the group config and the group's ``%RETRY%`` topic (registered with the
name servers so consumers can route it) and, when the group gains a client, tells every client of the group
to rebalance (NOTIFY_CONSUMER_IDS_CHANGED, oneway).  As in 4.9.3, a heartbeat is not refused for an SQL92
expression that does not compile: the group's pulls then answer FILTER_DATA_NOT_EXIST (pull.py).
CHECK_CLIENT_CONFIG is where a Java client learns of a bad expression before it starts: a TAG subscription
passes, another type needs ``enablePropertyFilter`` (else SYSTEM_ERROR) and an expression that compiles (else
SUBSCRIPTION_PARSE_FAILED with the parse error as remark).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketstore.broker.clients import ClientChannel, liveness_ms
from rocketstore.broker.topics import group_problem, retry_topic, topic_problem
from rocketstore.message.sql_filter import SQL92, SqlSyntaxError, compile_sql
from rocketstore.remoting import fastjson
from rocketstore.remoting.bodies import HeartbeatData, Perm, SubscriptionData
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketstore.remoting.server import RequestRouter
from rocketstore.remoting.transport import Connection

if TYPE_CHECKING:
    from rocketstore.broker.broker import Broker

__all__ = ["REBALANCE_LOCK_MAX_LIVE_MS", "QueueLocks", "register"]

#: rocketmq.broker.rebalance.lockMaxLiveTime
REBALANCE_LOCK_MAX_LIVE_MS = 60_000


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Lock:
    client_id: str
    last_update_ms: int


class QueueLocks:
    """RebalanceLockManager: (group, topic, brokerName, queueId) -> holder; a lock expires after 60 s.
    Callers pass *now_ms* on the monotonic clock (``liveness_ms``), not 4.9.3's currentTimeMillis: a wall
    clock stepped forward would free every lock at once (two members of a group then consume one queue
    orderly side by side), one stepped back would hold a dead member's queues for as long.
    ``locks`` is kept in the order of the last grant (a renewal moves its entry last), so the expired
    entries are the first ones: ``try_lock`` drops them (4.9.3 keeps them until unlocked, for ever for a
    deleted topic or group); anyone may take an expired lock, so dropping one changes no answer."""

    def __init__(self, max_live_ms: int = REBALANCE_LOCK_MAX_LIVE_MS) -> None:
        self.max_live_ms = max_live_ms
        self.locks: OrderedDict[tuple[str, str, str, int], _Lock] = OrderedDict()

    def try_lock(self, group: str, client_id: str, queues: list[tuple[str, str, int]], now_ms: int
                 ) -> list[tuple[str, str, int]]:
        locks = self.locks
        while locks:  # the oldest grants first: stop at the first one still live
            oldest, held = next(iter(locks.items()))
            if held.last_update_ms + self.max_live_ms >= now_ms:
                break
            del locks[oldest]
        granted = []
        for topic, broker_name, queue_id in queues:
            key = (group, topic, broker_name, queue_id)
            lock = locks.get(key)
            if lock is None or lock.client_id == client_id or lock.last_update_ms + self.max_live_ms < now_ms:
                locks[key] = _Lock(client_id, now_ms)
                locks.move_to_end(key)
                granted.append((topic, broker_name, queue_id))
        return granted

    def unlock(self, group: str, client_id: str, queues: list[tuple[str, str, int]]) -> None:
        for topic, broker_name, queue_id in queues:
            key = (group, topic, broker_name, queue_id)
            lock = self.locks.get(key)
            if lock is not None and lock.client_id == client_id:
                del self.locks[key]


def _heartbeat_problem(data: HeartbeatData) -> str | None:
    """Why a heartbeat names an invalid group or subscription topic, or None.  Checked before anything is
    registered: a consumer group is auto-created in subscriptionGroup.json with its %RETRY% topic."""
    for consumer in data.consumers:
        problem = group_problem(consumer.group_name)
        if problem is None:
            for sub in consumer.subscriptions:
                problem = topic_problem(sub.topic)
                if problem is not None:
                    break
        if problem is not None:
            return problem
    for group in data.producer_groups:
        # producer groups live in memory only; a blank one (nothing to register) is let through as before
        problem = group_problem(group) if group else None
        if problem is not None:
            return problem
    return None


def register(router: RequestRouter, broker: Broker) -> None:
    locks = broker.queue_locks

    async def heart_beat(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        data = HeartbeatData.decode(request.body)
        problem = _heartbeat_problem(data)
        if problem is not None:  # refuse the whole heartbeat: nothing of it is registered or created
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=problem)
        now = _now_ms()
        changes = broker.config_changes()
        conn.attributes["client_id"] = data.client_id
        live = liveness_ms()  # the channels' clock; *now* (wall) dates a new filter, as 4.9.3's bornTime
        channel_args = (data.client_id, request.language.name, request.version, conn.peer_address, live)
        for consumer in data.consumers:
            group_cfg = broker.groups.find_or_create(consumer.group_name)
            notify = broker.config.notify_consumer_ids_changed_enable
            if group_cfg is not None:
                notify = notify and group_cfg.notify_consumer_ids_changed_enable
                topic = retry_topic(consumer.group_name)
                if broker.topics.get(topic) is None:
                    before = broker.topics.data_version
                    broker.topics.create_retry_or_dlq(topic, group_cfg.retry_queue_nums, Perm.READ | Perm.WRITE,
                                                      2 if consumer.unit_mode else 0)
                    # registered now, and the member announced (and the heartbeat answered) once the
                    # name servers route it, as 4.9.3 waits for their answers before registerConsumer: the
                    # rebalance a Java consumer makes on the notification looks the %RETRY% route up at once,
                    # and one not found left the group's sent-back messages unpulled until the next
                    # rebalance (20 s)
                    registered = broker.topic_config_changed(topic, before)
                    if registered is not None:
                        await asyncio.wait((registered,))
            # as 4.9.3's registerConsumer: a new member, or a member's topics changing, is announced to the group
            new_client, subs_changed = broker.clients.register_consumer(consumer, ClientChannel(conn, *channel_args),
                                                                        now)
            if (new_client or subs_changed) and notify:
                broker.notify_consumer_ids_changed(consumer.group_name)
        for group in data.producer_groups:
            broker.clients.register_producer(group, ClientChannel(conn, *channel_args), now)
        if broker.config_changes() != changes:
            await broker.config_written_quietly()  # the group / %RETRY% topic it created is on disk, as in 4.9.3
        return request.make_response(ResponseCode.SUCCESS)

    async def unregister_client(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = UnregisterClientRequestHeader.from_ext_fields(request.ext_fields)
        if h.producer_group:
            broker.clients.unregister_producer(h.producer_group, conn)
        if h.consumer_group and broker.clients.unregister_consumer(h.consumer_group, conn):
            broker.notify_consumer_ids_changed(h.consumer_group)
        return request.make_response(ResponseCode.SUCCESS)

    async def consumer_list(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        h = GetConsumerListByGroupRequestHeader.from_ext_fields(request.ext_fields)
        ids = broker.clients.consumer_ids(h.consumer_group)
        if not ids:
            return request.make_response(ResponseCode.SYSTEM_ERROR,
                                         remark=f"no consumer for this group, {h.consumer_group}")
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"consumerIdList": ids}))

    async def check_client_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        obj = fastjson.loads(request.body) if request.body else None
        sub_obj = obj.get("subscriptionData") if isinstance(obj, dict) else None
        if isinstance(sub_obj, dict):
            sub = SubscriptionData.from_json(sub_obj)
            if sub.expression_type == "TAG":
                return request.make_response(ResponseCode.SUCCESS)
            if not broker.config.enable_property_filter:
                return request.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    remark=f"The broker does not support consumer to filter message by {sub.expression_type}")
            if sub.expression_type != SQL92:
                return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                             remark=f"no filter for expression type {sub.expression_type}")
            try:
                compile_sql(sub.sub_string)
            except SqlSyntaxError as exc:
                return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=str(exc))
        return request.make_response(ResponseCode.SUCCESS)

    def _mq_set(body: bytes) -> tuple[str, str, list[tuple[str, str, int]]]:
        """(group, client id, queues) of a LockBatchRequestBody / UnlockBatchRequestBody; JsonBodyError
        (answered SYSTEM_ERROR) for an mqSet that is not a list or a queueId that is not a Java int."""
        obj = fastjson.loads(body) if body else {}
        if not isinstance(obj, dict):
            return "", "", []
        mq_set = obj.get("mqSet") or []
        if not isinstance(mq_set, list):
            raise fastjson.JsonBodyError(f"mqSet is not a list: {mq_set!r:.80}")
        mqs = []
        for mq in mq_set:
            if isinstance(mq, dict):
                raw = mq.get("queueId", 0)
                try:
                    queue_id = int(raw)
                except (TypeError, ValueError, OverflowError):
                    raise fastjson.JsonBodyError(f"queueId is not a number: {raw!r:.80}") from None
                if not -(1 << 31) <= queue_id < 1 << 31:
                    raise fastjson.JsonBodyError(f"queueId {queue_id} is out of range for a Java int")
                mqs.append((str(mq.get("topic", "")), str(mq.get("brokerName", "")), queue_id))
        # mqSet is a Set<MessageQueue> in 4.9.3: a queue listed twice is one queue (and 16 MiB of "{}," one
        # lock, not an answer of millions of entries past the frame limit)
        return str(obj.get("consumerGroup", "")), str(obj.get("clientId", "")), list(dict.fromkeys(mqs))

    def _lockable(group: str, mqs: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
        """The queues of *mqs* a consumer of *group* could ask this broker for: those of a topic it holds
        (the client's route came from it), under its broker name, within the topic's queue count, for a group
        it knows (in its subscription groups, or with a consumer registered).  The others are left out of
        the answer as a queue locked by another member is: 4.9.3 grants and records whatever a request
        names, so made-up groups, topics or queues grew its lock table for good (rocketstore's bound)."""
        if broker.groups.get(group) is None and broker.clients.group(group) is None:
            return []
        name = broker.config.broker_name
        lockable = []
        for mq in mqs:
            topic, broker_name, queue_id = mq
            if broker_name == name and queue_id >= 0:
                # the larger count: after an update with fewer read queues, clients routed before ask a while
                tc = broker.topics.get(topic)
                if tc is not None and queue_id < max(tc.read_queue_nums, tc.write_queue_nums):
                    lockable.append(mq)
        return lockable

    # lock_batch and unlock_batch act before their first await (they have none): a connection's requests
    # start in the order read, so a lock the client has given up on (its 1 s bound passed while the broker
    # was stalled) is still served before the unlock sent after it, never after (which would lock the queue
    # again for 60 s).  4.9.3 serves both on a pool of threads and does not promise that order.
    # tests/integration/test_hunt21_relock_stalled_broker.py fails if lock_batch yields before try_lock.
    async def lock_batch(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group, client_id, mqs = _mq_set(request.body)
        granted = locks.try_lock(group, client_id, _lockable(group, mqs), liveness_ms())
        body = fastjson.dumps({"lockOKMQSet": [{"brokerName": b, "queueId": q, "topic": t} for t, b, q in granted]})
        return request.make_response(ResponseCode.SUCCESS, body=body)

    async def unlock_batch(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group, client_id, mqs = _mq_set(request.body)
        locks.unlock(group, client_id, mqs)
        return request.make_response(ResponseCode.SUCCESS)

    router.add(RequestCode.HEART_BEAT, heart_beat)
    router.add(RequestCode.UNREGISTER_CLIENT, unregister_client)
    router.add(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumer_list)
    router.add(RequestCode.CHECK_CLIENT_CONFIG, check_client_config)
    router.add(RequestCode.LOCK_BATCH_MQ, lock_batch)
    router.add(RequestCode.UNLOCK_BATCH_MQ, unlock_batch)
