"""Which queue a producer's send goes to: the publish queues and master addresses of a topic's route
(:class:`_Targets`, worked out once per route), the queues a send to a chosen queue id or MessageQueue may
go to, what such a send that no broker takes raises, and the queue selectors of orderly sends
(:func:`hash_queue_selector`, 4.9.3's SelectMessageQueueByHash).  Pure: no I/O, no state; the producer
(:mod:`rocketstore.client.producer`, which re-exports the public names) keeps the per-topic cache and the
round-robin counter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter

from rocketstore.client.errors import ClientError, QueueNotInRouteError
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.message.hashing import java_string_hash
from rocketstore.remoting.bodies import TopicRouteData
from rocketstore.remoting.headers import MAX_QUEUE_NUMS

__all__ = ["QueueSelector", "hash_queue_selector"]

#: ``selector(queues, sharding_key) -> one of queues``, as RocketMQ's MessageQueueSelector
QueueSelector = Callable[[list[MessageQueue], object], MessageQueue]


def _java_number_hash(value: int) -> int:
    """hashCode of the Java number *value* would be: an Integer's is itself (as the C++ client's hashing
    selector takes ``arg % size``), a Long's ``(int) (v ^ (v >>> 32))`` (of its low 64 bits beyond)."""
    if -(1 << 31) <= value < (1 << 31):
        return value
    v = value & 0xFFFFFFFFFFFFFFFF
    h = (v ^ (v >> 32)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def hash_queue_selector(queues: list[MessageQueue], sharding_key: object) -> MessageQueue:
    """SelectMessageQueueByHash: ``abs(key.hashCode() % len(queues))``: String.hashCode of text, and of an
    int Integer.hashCode (itself) when it fits 32 bits, else Long.hashCode, as a Java ``long`` key hashes."""
    code = _java_number_hash(sharding_key) if isinstance(sharding_key, int) else java_string_hash(str(sharding_key))
    # Java's % keeps the dividend's sign
    index = abs(code) % len(queues)
    return queues[index]


def _chosen_queue(topic: str, queue_id: int | None, message_queue: MessageQueue) -> tuple[int, str]:
    """(queue id, broker name) of a send to *message_queue* (Java's send(msg, mq)); ValueError with a
    *queue_id* too, ClientError for another topic's queue (4.9.3: "message's topic not equal mq's topic")."""
    if queue_id is not None:
        raise ValueError("give queue_id or message_queue, not both")
    if message_queue.topic != topic:
        raise ClientError(f"message's topic not equal mq's topic: {topic!r} != {message_queue.topic!r}")
    return message_queue.queue_id, message_queue.broker_name


def _not_a_target(topic: str, targets: _Targets, queue_id: int, broker_name: str | None
                  ) -> QueueNotInRouteError:
    """What a send to a queue id (of *broker_name*) that no broker of the route takes raises.

    Refused here, before anything is sent, where 4.9.3 refuses a broker not in the route
    (sendKernelImpl: "The broker[..] not exist") but sends a queue id for its broker to refuse
    (SYSTEM_ERROR "request queueId[n] is illegal", msgCheck): the route already tells (the broker takes an
    id below max(writeQueueNums, readQueueNums), as :func:`_new_targets` works out), so the round trip
    would only bring the same refusal, and every send path (send, send_oneway, the orderly sends, the
    CLI's --queue) refuses it alike, with the queue ids there are.  (A cached route may be up to a route
    refresh old: a queue added to the topic since is refused until the producer's route has it.)"""
    if broker_name is not None and broker_name not in targets.addrs:
        return QueueNotInRouteError(
            topic, queue_id, broker_name, f"the broker[{broker_name}] is not a publish broker of topic "
                                          f"{topic!r} (its brokers: {sorted(targets.addrs)})",
            broker_missing=True)
    where = "" if broker_name is None else f" on broker {broker_name}"
    return QueueNotInRouteError(
        topic, queue_id, broker_name, f"queueId {queue_id} is not a writeable queue of topic {topic!r}{where} "
                                      f"(its queue ids: {sorted(targets.by_queue_id)})",
        broker_missing=False)


@dataclass(frozen=True, slots=True)
class _Targets:
    """Where a topic's sends may go under one route: its publish queues and each broker's master address
    (publish queues exist only for brokers with one), worked out once per route rather than per send."""

    route: TopicRouteData
    queues: list[MessageQueue]
    addrs: dict[str, str]
    #: queue id -> the queues with that id (a send to a chosen queue id)
    by_queue_id: dict[int, list[MessageQueue]]


def _no_master(mq: MessageQueue) -> QueueNotInRouteError:
    """What a send to *mq* raises when the route gives its broker no master (4.9.3's sendKernelImpl: "The
    broker[..] not exist")."""
    return QueueNotInRouteError(mq.topic, mq.queue_id, mq.broker_name,
                                f"broker {mq.broker_name} has no master in the route of topic {mq.topic!r}",
                                broker_missing=True)


def _master_addr(route: TopicRouteData, mq: MessageQueue) -> str:
    bd = route.broker(mq.broker_name)
    addr = bd.master_addr() if bd is not None else None
    if addr is None:
        raise _no_master(mq)
    return addr


def _new_targets(topic: str, route: TopicRouteData) -> _Targets:
    """The :class:`_Targets` of *topic* under *route* (a producer keeps them per topic until the route
    changes)."""
    queues = RouteCache.publish_queues(topic, route)
    # an order config (see RouteCache.publish_queues) may name a broker the route gives no master (it is
    # down, or gone from the cluster): its queues stay publish queues, as in 4.9.3's
    # topicRouteData2TopicPublishInfo (a selector's key keeps its queue), but a send picking one fails
    # there and a plain send goes on to another broker (sendDefaultImpl's retry), so the other brokers'
    # queues are still sent to
    addrs: dict[str, str] = {}
    for name in dict.fromkeys(mq.broker_name for mq in queues):
        bd = route.broker(name)
        addr = bd.master_addr() if bd is not None else None
        if addr is not None:
            addrs[name] = addr
    by_queue_id: dict[int, list[MessageQueue]] = {}
    for mq in queues:
        by_queue_id.setdefault(mq.queue_id, []).append(mq)
    # a send to a chosen queue id (Java's send(msg, mq)) may name any queue its broker takes: 4.9.3's
    # msgCheck takes an id below max(writeQueueNums, readQueueNums), so a queue past the write queues but
    # still read is a target of such a send on the brokers the publish queues are on (not of a plain send)
    have = {(mq.broker_name, mq.queue_id) for mq in queues}
    for qd in sorted(route.queue_datas, key=attrgetter("broker_name")):
        if qd.broker_name in addrs:
            # (at most MAX_QUEUE_NUMS: a Java name server routes any int)
            for queue_id in range(min(max(qd.write_queue_nums, qd.read_queue_nums), MAX_QUEUE_NUMS)):
                if (qd.broker_name, queue_id) not in have:
                    mq = MessageQueue(topic, qd.broker_name, queue_id)
                    by_queue_id.setdefault(queue_id, []).append(mq)
    return _Targets(route, queues, addrs, by_queue_id)


def _queue_avoiding(queues: list[MessageQueue], counter: Iterator[int], failed_broker: str) -> MessageQueue:
    """The queue a plain send's retry goes to after a try on *failed_broker* failed, as 4.9.3's
    TopicPublishInfo.selectOneMessageQueue(lastBrokerName) picks it: the shared round-robin *counter*
    steps on until it reaches a queue of another broker (the first queue it lands on when every queue is
    the failed broker's).  The counter is left past the failed broker's queues, so the producer's next
    send begins on another broker too, not on the next queue of the broker that just failed (with a broker
    that hangs, every send beginning there times out)."""
    size = len(queues)
    for _ in range(size):
        mq = queues[next(counter) % size]
        if mq.broker_name != failed_broker:
            return mq
    return queues[next(counter) % size]


def _queues_with_id(targets: _Targets, queue_id: int, broker_name: str | None = None
                    ) -> list[MessageQueue]:
    """Where a send to *queue_id* may go (Java's send(msg, mq) sends any id, the broker judges it): the
    queues with that id (see :func:`_new_targets`), and for a negative id a queue of each broker the
    topic's publish queues are on, where the broker picks one of its write queues (4.9.3's
    SendMessageProcessor: randomQueueId) and answers which; only *broker_name*'s when given (a send to
    a MessageQueue)."""
    queues = targets.by_queue_id.get(queue_id)
    if queues is None and queue_id < 0 and targets.queues:
        topic = targets.queues[0].topic
        names = dict.fromkeys(q.broker_name for q in targets.queues)
        queues = [MessageQueue(topic, name, queue_id) for name in names]
    if queues and broker_name is not None:
        queues = [q for q in queues if q.broker_name == broker_name]
    return queues or []
