"""The sends of a :class:`~rocketstore.client.producer.Producer` that are tried once: oneway (4.9.3's
sendOneway: no answer, no retry, a failed write raises) and orderly (sendSelectImpl: the queue a
:data:`QueueSelector` picks for a sharding key, never another, so that messages with one key keep their
order; ``send_oneway_orderly`` is both).  :class:`SingleTrySends` is the Producer's base class; the
retried sends (plain and batch) are the Producer's own, the request each of them writes is
:class:`~rocketstore.client.send_request.SendRequests`'."""

from __future__ import annotations

import dataclasses
import itertools
import time

from rocketstore.client.errors import ClientError, NoRouteError, SendCallTimeoutError, send_failed
from rocketstore.client.latency_fault import LatencyFaultTolerance
from rocketstore.client.namespace import (
    queue_with_namespace,
    queue_without_namespace,
    queues_without_namespace,
    with_namespace,
)
from rocketstore.client.outgoing_message import (
    OutgoingMessage,
    SendResult,
    _check_properties,
    _retry_header_fields,
    _send_code,
    new_uniq_key,
)
from rocketstore.client.queue_choice import (
    QueueSelector,
    _chosen_queue,
    _master_addr,
    _no_master,
    _not_a_target,
    _queues_with_id,
    hash_queue_selector,
)
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.client.send_request import SendRequests, send_call_timeout
from rocketstore.errors import LoopBoundError, RemotingError
from rocketstore.message.properties import encode_properties
from rocketstore.remoting.bodies import TopicRouteData
from rocketstore.remoting.command import RemotingCommand

__all__ = ["SingleTrySends"]


class SingleTrySends(SendRequests):
    """Oneway and orderly sends (see the module's docstring).  The fields below are the Producer's (its
    ``__init__`` sets them)."""

    timeout_s: float
    #: the round-robin over a topic's publish queues, shared with the Producer's retried sends
    _next_queue: itertools.count[int]
    #: the brokers' send latencies while sendLatencyFaultEnable is on, else None (see the Producer's)
    _fault: LatencyFaultTolerance | None

    async def send_oneway(self, topic: str, body: bytes, *, tags: str | None = None,
                          keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                          queue_id: int | None = None, message_queue: MessageQueue | None = None) -> None:
        """Send without waiting for an answer (the request's oneway flag): nothing comes back, a failed
        write raises, and there is no retry, as RocketMQ's sendOneway.  *queue_id* and *message_queue*: as
        :meth:`send`'s (Java's sendOneway(msg, mq))."""
        if self.namespace is not None:
            topic, message_queue = self._in_namespace(topic, message_queue)
        self._check(topic, body)
        broker_name: str | None = None
        if message_queue is not None:
            queue_id, broker_name = _chosen_queue(topic, queue_id, message_queue)
        deadline = time.monotonic() + self.timeout_s
        body, sys_flag = self._compressed(body)
        message = OutgoingMessage(body, tags, keys, dict(properties or {}))
        retry_fields = _retry_header_fields(topic, message.properties)
        props = message.property_map(new_uniq_key())
        _check_properties(props)
        route, _ = await self.routes.publish_route(topic)
        targets = self._targets_of(topic, route)
        if not targets.queues:  # a cached route without a queue to send to is asked for again (see _send)
            route, _ = await self.routes.publish_route(topic, refresh=True)
            targets = self._targets_of(topic, route)
        queues = targets.queues
        if queue_id is not None:  # any queue id the broker takes, as a send's (see _targets_of)
            chosen = _queues_with_id(targets, queue_id, broker_name)
            if not chosen and queues:  # named as a send names it (see _send)
                raise _not_a_target(topic, targets, queue_id, broker_name)
            queues = chosen
        if not queues:
            raise NoRouteError(topic, "no writeable queue")
        # a plain oneway send is sendDefaultImpl's too: with sendLatencyFaultEnable, its latency counts
        fault = self._fault if queue_id is None else None
        if fault is None:
            mq = queues[next(self._next_queue) % len(queues)]
        else:
            mq = fault.select(queues, targets.route, self._next_queue)
        addr = targets.addrs.get(mq.broker_name)
        if addr is None:  # an order config's broker without a master (see queue_choice._new_targets)
            if fault is not None:
                fault.update(mq.broker_name, 0, True)
            raise _no_master(mq)
        ext = self._header(topic, mq.queue_id, encode_properties(props), False, message.flag,
                           sys_flag).to_ext_fields_v2()
        ext.update(retry_fields or {})
        request = RemotingCommand.request(_send_code(message.properties), ext, body, oneway=True)
        timeout_s = deadline - time.monotonic()  # the route look-up counts, as in sendDefaultImpl
        if timeout_s <= 0:
            raise send_call_timeout(None)
        if fault is not None:
            begin_ms = fault.clock()
        try:
            await self.pool.oneway(addr, request, timeout_s)
        except LoopBoundError:
            raise  # not a failed try: the producer is used from the wrong loop (see _send)
        except RemotingError as exc:
            if fault is not None:
                fault.update(mq.broker_name, fault.clock() - begin_ms, True)
            if queue_id is not None:  # sendOneway(msg, mq): sendKernelImpl's exception as it is
                raise
            # sendDefaultImpl's one oneway try failed: "Send [1] times, still failed" (the module's docstring)
            cost_ms = int((time.monotonic() - deadline + self.timeout_s) * 1000)
            raise send_failed(exc, topic, 1, cost_ms, (mq.broker_name,)) from exc
        if fault is not None:
            fault.update(mq.broker_name, fault.clock() - begin_ms, False)


    async def send_orderly(self, topic: str, body: bytes, sharding_key: object, *, tags: str | None = None,
                           keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                           selector: QueueSelector = hash_queue_selector, timeout_s: float | None = None
                           ) -> SendResult:
        """Send to the queue *selector* picks for *sharding_key* among the topic's publish queues, so that
        messages with one key keep their order.  No retry on another queue (that would break the order);
        a failure raises.  *timeout_s*: this send's bound instead of the producer's (Java's
        send(msg, selector, arg, timeout)).  In a namespace, *selector* is given the queues named without
        it."""
        if self.namespace is not None:
            topic = with_namespace(self.namespace, topic)
        self._check(topic, body)
        body, sys_flag = self._compressed(body)
        if self.trace is None:
            result = await self._send_orderly(topic, body, sys_flag, sharding_key, tags, keys, properties,
                                              selector, timeout_s=timeout_s)
        else:
            began_ms = [0]
            sending = self._send_orderly(topic, body, sys_flag, sharding_key, tags, keys, properties,
                                         selector, began_ms, timeout_s=timeout_s)
            # the Pub's bodyLength is what went out, compressed or not (Java's hook runs after
            # tryToCompressMessage)
            result = await self.trace.pub(sending, topic, len(body), tags, keys, properties,
                                          began_ms=began_ms)
        return result if self.namespace is None else self._out_of_namespace(result)


    async def send_oneway_orderly(self, topic: str, body: bytes, sharding_key: object, *,
                                  tags: str | None = None, keys: str | list[str] | None = None,
                                  properties: dict[str, str] | None = None,
                                  selector: QueueSelector = hash_queue_selector) -> None:
        """:meth:`send_oneway` to the queue *selector* picks for *sharding_key*, as :meth:`send_orderly` picks
        it (Java's sendOneway(msg, selector, arg)): refused, with no route or a failing selector, in
        send_orderly's words; a failed write raises as it is (no retry, no "Send [1] times")."""
        if self.namespace is not None:
            topic = with_namespace(self.namespace, topic)
        self._check(topic, body)
        _, _, mq = await self._selected_queue(topic, sharding_key, selector)
        await self.send_oneway(topic, body, tags=tags, keys=keys, properties=properties, message_queue=mq)


    async def _selected_queue(self, topic: str, sharding_key: object, selector: QueueSelector
                              ) -> tuple[TopicRouteData, bool, MessageQueue]:
        """The publish route of *topic*, whether the name servers know it (see RouteCache.publish_route),
        and the queue *selector* picks among its publish queues for *sharding_key*; NoRouteError and the
        selector's failures in 4.9.3's sendSelectImpl's words, QueueNotInRouteError for a picked queue the
        route lacks."""
        try:
            route, known = await self.routes.publish_route(topic)
            queues = RouteCache.publish_queues(topic, route)
            if not queues:  # a cached route without a queue to send to is asked for again (see Producer._send)
                route, known = await self.routes.publish_route(topic, refresh=True)
                queues = RouteCache.publish_queues(topic, route)
        except NoRouteError as exc:  # in sendSelectImpl's words, not sendDefaultImpl's
            raise NoRouteError(topic, exc.reason, words=f"No route info for this topic, {topic}") from exc
        if not queues:
            raise NoRouteError(topic, "no writeable queue", words=f"No route info for this topic, {topic}")
        if self.namespace is not None:  # the selector sees the user's names (parsePublishMessageQueues)
            queues = queues_without_namespace(self.namespace, queues)
        try:
            mq = selector(queues, sharding_key)
        except Exception as exc:  # the user's selector: its failure is named as Java's sendSelectImpl names it
            raise ClientError(f"select message queue threw exception: {type(exc).__name__}: {exc}") from exc
        if not isinstance(mq, MessageQueue):
            raise ClientError(f"select message queue return {'null' if mq is None else repr(mq)}.")
        if self.namespace is not None:
            mq = queue_with_namespace(self.namespace, mq)
        # a selector may return any queue (the CLI's --broker with --queue does): one the route lacks is
        # refused as a send to a chosen queue is (see _not_a_target)
        targets = self._targets_of(topic, route)
        if not _queues_with_id(targets, mq.queue_id, mq.broker_name):
            raise _not_a_target(topic, targets, mq.queue_id, mq.broker_name)
        return route, known, mq


    def _in_namespace(self, topic: str, mq: MessageQueue | None) -> tuple[str, MessageQueue | None]:
        """*topic* and *mq* in this producer's namespace (DefaultMQProducer's withNamespace /
        queueWithNamespace)."""
        return (with_namespace(self.namespace, topic),
                None if mq is None else queue_with_namespace(self.namespace, mq))

    def _out_of_namespace(self, result: SendResult) -> SendResult:
        """*result* with its queue's topic out of the namespace, as the Java producer hands it back."""
        return dataclasses.replace(result, message_queue=queue_without_namespace(self.namespace,
                                                                                 result.message_queue))

    async def _send_orderly(self, topic: str, body: bytes, sys_flag: int, sharding_key: object, tags: str | None,
                            keys: str | list[str] | None, properties: dict[str, str] | None,
                            selector: QueueSelector, began_ms: list[int] | None = None, *,
                            timeout_s: float | None = None) -> SendResult:
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        message = OutgoingMessage(body, tags, keys, dict(properties or {}))
        retry_fields = _retry_header_fields(topic, message.properties)
        uniq = message.uniq_key()
        props = message.property_map(uniq)
        _check_properties(props)
        route, known, mq = await self._selected_queue(topic, sharding_key, selector)
        header = self._header(topic, mq.queue_id, encode_properties(props), False, message.flag, sys_flag)
        ext = header.to_ext_fields_v2()
        ext.update(retry_fields or {})
        request = RemotingCommand.request(_send_code(message.properties), ext, body)
        addr = _master_addr(route, mq)
        # the route look-up and the selector count against the timeout, as sendSelectImpl's costTime
        timeout_s = deadline - time.monotonic()
        if timeout_s <= 0:
            raise SendCallTimeoutError("sendSelectImpl call timeout")
        if began_ms is not None:  # the trace times the request, not the route look-up (see _send)
            began_ms[0] = int(time.time() * 1000)
        response = await self.pool.request(addr, request, timeout_s)
        result = self._result(response, uniq, mq)
        if not known:
            self.routes.invalidate(topic)
        return result

