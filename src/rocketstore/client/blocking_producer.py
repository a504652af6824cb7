"""Producers for code without an event loop: :class:`Producer`, :class:`TransactionProducer` and
:class:`RequestProducer` on a loop in their own thread, called as Java's DefaultMQProducer is called.

    with BlockingProducer("127.0.0.1:9876", "my-group") as producer:      # started on entry
        result = producer.send("TopicA", b"hello", tags="TagA", keys="order-1")
        producer.send_oneway("TopicA", b"fire and forget")
        producer.send_orderly("TopicA", b"step 1", "order-1")

The constructors take the asyncio classes' arguments (plus ``call_timeout_s``); each method takes the
asyncio method's arguments and returns its result or raises its error as it is (SendFailedError,
MessageIllegalError, NoRouteError, ...).  Thread-safe: one producer may be shared by any number of threads
(their sends meet on the producer's one loop, as a Java producer is shared).  A call waits at most the
send's own bound (``timeout_s``, a request's timeout) plus ``call_timeout_s``; interrupted there (Ctrl-C:
KeyboardInterrupt) or timed out (TimeoutError) it is cancelled on the loop, and the producer stays usable
(a request already written may still be stored, as a Java send interrupted after its write).  Refused with
RuntimeError: a call from a forked child (create a producer there) and from the producer's own loop thread
(a selector or an async listener: await the asyncio producer, ``.producer``).  After ``shutdown()`` calls
raise ClientError.  A program that exits without ``shutdown()`` neither hangs nor prints tracebacks (the
loop thread is a daemon; the brokers drop the producer when its connections close).

:class:`BlockingTransactionProducer` runs a plain ``execute(message, arg)`` in a worker thread (Java runs it
on the sending thread; here the loop stays free for the other threads' sends meanwhile); ``check`` runs as
the asyncio producer runs it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, ClassVar, Self

from rocketstore.client.errors import ClientError, ServiceState, state_not_ok
from rocketstore.client.loop_thread import LoopThread
from rocketstore.client.producer import (
    DEFAULT_PRODUCER_GROUP,
    HasProperties,
    OutgoingMessage,
    Producer,
    QueueSelector,
    SendResult,
    hash_queue_selector,
)
from rocketstore.client.request_producer import ReplyMessage, RequestProducer
from rocketstore.client.route import MessageQueue
from rocketstore.client.transaction_producer import (
    CheckListener,
    LocalTransactionExecutor,
    TransactionMessage,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = ["BlockingProducer", "BlockingRequestProducer", "BlockingTransactionProducer"]


class _BlockingClient(LoopThread):
    """start / shutdown / ``with`` of a blocking producer whose asyncio producer is ``self.producer``."""

    client_attribute: ClassVar[str] = "producer"
    shut_down_words: ClassVar[str] = state_not_ok("producer", "SHUTDOWN_ALREADY")
    producer: Producer | TransactionProducer

    def _create(self, make: Callable[[], Any]) -> Any:
        """The asyncio producer *make* builds on the loop (loop-bound); the loop thread goes if it fails."""
        try:
            return self._call_sync(make)
        except BaseException:
            self._stop_loop()
            raise

    @property
    def client_id(self) -> str:
        return self.producer.client_id

    @property
    def service_state(self) -> ServiceState:
        """:attr:`Producer.service_state` (CREATE_JUST, RUNNING, SHUTDOWN_ALREADY, START_FAILED)."""
        return self.producer.service_state

    @property
    def is_running(self) -> bool:
        """:attr:`Producer.is_running`: started and not shut down."""
        return self.producer.is_running

    def start(self) -> None:
        """Start the heartbeats (optional: the first send starts them).  A producer that cannot start (its
        group refused, or shut down) closes and its loop thread goes: ``with`` calls no ``__exit__`` after
        a failed ``__enter__``; a start after that raises the producer's START_FAILED error, as its start
        does."""
        if self.producer.start_failed:
            self.producer.check_startable()
        try:
            self._call(self.producer.start())
        except ClientError:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        """Unregister from the brokers, close the connections, end the loop thread; from any thread, any
        number of times (a forked child's does nothing: the producer is the parent's)."""
        self._stop(self.producer.close, False)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class BlockingProducer(_BlockingClient):
    """:class:`Producer` for code without an event loop; ``with`` starts and shuts it down."""

    producer: Producer

    def __init__(self, namesrv_addr: str | None = None, group: str = DEFAULT_PRODUCER_GROUP, *,
                 call_timeout_s: float = 60.0, **options: Any) -> None:
        """*options*: :class:`Producer`'s keyword arguments (``timeout_s``, ``retry_times``, ``credentials``,
        ``tls``, ``enable_trace``, ``send_latency_fault_enable``, ...).  *call_timeout_s*: how much longer
        than a send's own bound a call waits for it (a guard against a loop that hangs)."""
        super().__init__(f"producer-{group}", call_timeout_s)
        self.producer = self._create(lambda: self._new_producer(namesrv_addr, group, options))

    @staticmethod
    def _new_producer(namesrv_addr: str | None, group: str, options: dict[str, Any]) -> Producer:
        return Producer(namesrv_addr, group, **options)

    def send(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | list[str] | None = None,
             properties: dict[str, str] | None = None, queue_id: int | None = None,
             timeout_s: float | None = None, message_queue: MessageQueue | None = None,
             flag: int = 0) -> SendResult:
        return self._call(self.producer.send(topic, body, tags=tags, keys=keys, properties=properties,
                                             queue_id=queue_id, timeout_s=timeout_s,
                                             message_queue=message_queue, flag=flag),
                          timeout_s if timeout_s is not None else self.producer.timeout_s)

    def send_async(self, topic: str, body: bytes, *, tags: str | None = None,
                   keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                   queue_id: int | None = None, timeout_s: float | None = None,
                   message_queue: MessageQueue | None = None, flag: int = 0) -> Future[SendResult]:
        """:meth:`send` without waiting (Java's send(msg, SendCallback)): a concurrent.futures.Future of its
        SendResult or error.  A callback added with ``add_done_callback`` runs on the producer's loop thread
        (keep it short; it may send again with send_async, not with this producer's blocking methods)."""
        return self._submit(self.producer.send(topic, body, tags=tags, keys=keys, properties=properties,
                                               queue_id=queue_id, timeout_s=timeout_s,
                                               message_queue=message_queue, flag=flag))

    def send_batch(self, topic: str, messages: list[OutgoingMessage], *,
                   queue_id: int | None = None, timeout_s: float | None = None,
                   message_queue: MessageQueue | None = None) -> SendResult:
        return self._call(self.producer.send_batch(topic, messages, queue_id=queue_id, timeout_s=timeout_s,
                                                   message_queue=message_queue),
                          timeout_s if timeout_s is not None else self.producer.timeout_s)

    def send_oneway(self, topic: str, body: bytes, *, tags: str | None = None,
                    keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                    queue_id: int | None = None, message_queue: MessageQueue | None = None) -> None:
        self._call(self.producer.send_oneway(topic, body, tags=tags, keys=keys, properties=properties,
                                             queue_id=queue_id, message_queue=message_queue),
                   self.producer.timeout_s)

    def send_orderly(self, topic: str, body: bytes, sharding_key: object, *, tags: str | None = None,
                     keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                     selector: QueueSelector = hash_queue_selector, timeout_s: float | None = None
                     ) -> SendResult:
        """*selector* runs on the producer's loop thread (keep it short; it may not call this producer)."""
        return self._call(self.producer.send_orderly(topic, body, sharding_key, tags=tags, keys=keys,
                                                     properties=properties, selector=selector,
                                                     timeout_s=timeout_s),
                          timeout_s if timeout_s is not None else self.producer.timeout_s)

    def send_orderly_async(self, topic: str, body: bytes, sharding_key: object, *, tags: str | None = None,
                           keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                           selector: QueueSelector = hash_queue_selector, timeout_s: float | None = None
                           ) -> Future[SendResult]:
        """:meth:`send_orderly` without waiting (Java's send(msg, selector, arg, SendCallback)), as
        :meth:`send_async`; *selector* runs on the producer's loop thread."""
        return self._submit(self.producer.send_orderly(topic, body, sharding_key, tags=tags, keys=keys,
                                                       properties=properties, selector=selector,
                                                       timeout_s=timeout_s))

    def send_oneway_orderly(self, topic: str, body: bytes, sharding_key: object, *, tags: str | None = None,
                            keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                            selector: QueueSelector = hash_queue_selector) -> None:
        """*selector* runs on the producer's loop thread (keep it short; it may not call this producer)."""
        self._call(self.producer.send_oneway_orderly(topic, body, sharding_key, tags=tags, keys=keys,
                                                     properties=properties, selector=selector),
                   self.producer.timeout_s)

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self.producer.fetch_publish_message_queues(topic),
                          self.producer.mq_client_api_timeout_s)

    def send_reply(self, request: HasProperties, body: bytes, *, tags: str | None = None,
                   keys: str | list[str] | None = None, properties: dict[str, str] | None = None
                   ) -> SendResult:
        return self._call(self.producer.send_reply(request, body, tags=tags, keys=keys,
                                                   properties=properties), self.producer.timeout_s)


class BlockingRequestProducer(BlockingProducer):
    """:class:`RequestProducer` for code without an event loop: :meth:`request` waits for the reply."""

    producer: RequestProducer

    @staticmethod
    def _new_producer(namesrv_addr: str | None, group: str, options: dict[str, Any]) -> Producer:
        return RequestProducer(namesrv_addr, group, **options)

    def request(self, topic: str, body: bytes, *, timeout_s: float = 3.0, tags: str | None = None,
                keys: str | list[str] | None = None, properties: dict[str, str] | None = None,
                queue_id: int | None = None, message_queue: MessageQueue | None = None) -> ReplyMessage:
        return self._call(self.producer.request(topic, body, timeout_s=timeout_s, tags=tags, keys=keys,
                                                properties=properties, queue_id=queue_id,
                                                message_queue=message_queue),
                          max(timeout_s, 0.0))

    def request_orderly(self, topic: str, body: bytes, sharding_key: object, *, timeout_s: float = 3.0,
                        tags: str | None = None, keys: str | list[str] | None = None,
                        properties: dict[str, str] | None = None,
                        selector: QueueSelector = hash_queue_selector) -> ReplyMessage:
        """*selector* runs on the producer's loop thread (keep it short; it may not call this producer)."""
        return self._call(self.producer.request_orderly(topic, body, sharding_key, timeout_s=timeout_s,
                                                        tags=tags, keys=keys, properties=properties,
                                                        selector=selector),
                          max(timeout_s, 0.0))


def _in_worker_thread(execute: LocalTransactionExecutor) -> LocalTransactionExecutor:
    """*execute* as the transactional producer calls it, a plain function run in a worker thread (not on
    the loop, which the other threads' sends share); an async one as it is."""
    call = getattr(execute, "__call__", None)  # noqa: B004 - an object with an async __call__ counts
    if inspect.iscoroutinefunction(execute) or inspect.iscoroutinefunction(call):
        return execute

    def run(message: TransactionMessage, arg: object) -> Awaitable[Any]:
        return asyncio.to_thread(execute, message, arg)

    return run


class BlockingTransactionProducer(_BlockingClient):
    """:class:`TransactionProducer` for code without an event loop; ``with`` starts and shuts it down."""

    producer: TransactionProducer

    def __init__(self, namesrv_addr: str | None, group: str, check: CheckListener, *, call_timeout_s: float = 60.0,
                 **options: Any) -> None:
        """*options*: :class:`TransactionProducer`'s keyword arguments; *call_timeout_s* as
        :class:`BlockingProducer`'s (a send_in_transaction waits for its local transaction too)."""
        super().__init__(f"transaction-producer-{group}", call_timeout_s)
        self.producer = self._create(lambda: TransactionProducer(namesrv_addr, group, check, **options))

    def send_in_transaction(self, topic: str, body: bytes, execute: LocalTransactionExecutor,
                            arg: object = None, *, tags: str | None = None,
                            keys: str | list[str] | None = None,
                            properties: dict[str, str] | None = None) -> TransactionSendResult:
        if not callable(execute):  # refused before anything is sent, as the asyncio producer refuses it
            raise TypeError("send_in_transaction needs a callable execute(message, arg)")
        sending = self.producer.send_in_transaction(topic, body, _in_worker_thread(execute), arg, tags=tags,
                                                    keys=keys, properties=properties)
        return self._call(sending, self.producer.timeout_s)
