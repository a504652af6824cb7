"""Consumers for code without an event loop: :class:`PushConsumer` / :class:`LitePullConsumer` on a loop
in their own thread.

    def handle(messages):
        for m in messages:
            print(m.topic, m.queue_id, m.queue_offset, m.body)
        return ConsumeStatus.CONSUME_SUCCESS

    with BlockingPushConsumer("127.0.0.1:9876", "my-group", {"TopicA": "*"}, handle) as consumer:
        time.sleep(60)

The handler runs on the consumer's thread pool (an async handler on the consumer's loop).  ``start()``
returns once the first rebalance is done; ``shutdown()`` returns once in-flight handlers finished and
offsets were committed (called from a handler it returns at once, the shutdown going on in a thread of its
own; timed out waiting for a long handler it raises TimeoutError, the shutdown going on and a later call
waiting for it again).  Thread-safe: start / shutdown / assignment may be called from any thread, but not
from the consumer's own loop thread (an async handler, a listener) nor from a forked child: RuntimeError.
Interrupted (Ctrl-C) or timed out, a call is cancelled on the loop (an abandoned poll loses no message).

    with BlockingLitePullConsumer("127.0.0.1:9876", "my-group") as consumer:   # started on entry
        consumer.subscribe("TopicA", "*")
        while running:
            for m in consumer.poll(timeout_s=5.0):
                ...

Every method of :class:`BlockingLitePullConsumer` runs the lite consumer's method on its loop and waits
for it (``poll`` up to its timeout plus ``call_timeout_s``); thread-safe likewise.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Self, TypeVar

from rocketstore.client.consumer import MessageSelector
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.lite_pull_consumer import ConsumerNotRunningError, LitePullConsumer, LitePullConsumerSettings
from rocketstore.client.push_consumer import PushConsumer, PushConsumerSettings
from rocketstore.client.push_types import ConsumedMessage, MessageHandler
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.tls import ClientTls
from rocketstore.remoting.transport import new_event_loop

__all__ = ["BlockingLitePullConsumer", "BlockingPushConsumer"]

T = TypeVar("T")


class _LoopThread:
    """An event loop running in a daemon thread of its own; ``_call`` runs a coroutine there and waits."""

    def __init__(self, thread_name: str, call_timeout_s: float) -> None:
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=thread_name, daemon=True)
        self._call_timeout_s = call_timeout_s
        self._pid = os.getpid()
        #: one shutdown / close at a time: a second one waits for the first instead of stopping the loop under it
        self._stop_lock = threading.Lock()
        #: the consumer's shutdown / close under way on the loop (the loop stops once it is done)
        self._stopping: Future[None] | None = None
        self._thread.start()

    def _check_caller(self) -> None:
        """Refuse the calls that could only hang: from a forked child (the loop thread and the connections
        are the parent's), and from the loop's own thread (an async handler or a listener waiting for the
        loop it blocks)."""
        if os.getpid() != self._pid:
            raise RuntimeError(f"{type(self).__name__} was created in process {self._pid}; after fork its "
                               "event loop thread and connections are not in this process: create one here")
        if threading.get_ident() == self._thread.ident:
            raise RuntimeError(f"{type(self).__name__} called from its own event loop thread (an async handler "
                               "or a listener) would wait for itself: await the asyncio consumer (.consumer)")

    def _call(self, coro: Coroutine[Any, Any, T], extra_timeout_s: float = 0.0) -> T:
        """Run *coro* on the loop and wait for it.  Interrupted (Ctrl-C) or timed out, the call is cancelled
        on the loop rather than left running: a poll nobody waits for any more would take messages and
        count them as consumed (committed, never delivered)."""
        try:
            self._check_caller()
            if not self._thread.is_alive():
                raise ConsumerNotRunningError(f"{type(self).__name__} is shut down")
        except BaseException:
            coro.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self._call_timeout_s + extra_timeout_s)
        except BaseException:
            future.cancel()
            raise

    def _call_sync(self, fn: Callable[[], T]) -> T:
        """Run the plain function *fn* on the loop (it touches loop-bound state) and wait for it."""
        async def run() -> T:
            return fn()

        return self._call(run())

    def _stop(self, consumer_stop: Callable[[], Coroutine[Any, Any, None]], on_own_thread: bool) -> None:
        """Shut the consumer down (*consumer_stop*) and end the loop thread; any thread, any number of
        times.  From the consumer's own threads (a handler, which shutdown would wait for, or the loop) it
        returns at once and a thread of its own does it (4.9.3's shutdown inside a listener does not wait
        for the listeners either)."""
        if os.getpid() != self._pid:
            return  # a forked child has no loop thread to stop; the parent's consumer is the parent's
        if on_own_thread or threading.get_ident() == self._thread.ident:
            threading.Thread(target=self._stop, args=(consumer_stop, False),
                             name=f"{self._thread.name}-shutdown").start()
            return
        with self._stop_lock:
            if self._stopping is None:
                if not self._thread.is_alive():
                    return
                self._check_caller()
                # not cancelled if this wait times out (a handler runs long) or is interrupted: the shutdown
                # goes on, commits and closes, and the loop stops after it (stopped under it, the consumer
                # was left half shut with its tasks destroyed pending); a later call waits for it again
                stopping = asyncio.run_coroutine_threadsafe(consumer_stop(), self._loop)
                stopping.add_done_callback(lambda _: self._loop.call_soon_threadsafe(self._loop.stop))
                self._stopping = stopping
            self._stopping.result(self._call_timeout_s)
            self._thread.join(10)
            if not self._thread.is_alive() and not self._loop.is_closed():
                self._loop.close()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def _start(self, consumer: PushConsumer | LitePullConsumer) -> None:
        """Run *consumer*'s start; if it failed (and so closed what it had opened: it cannot be started
        again), the loop thread goes too.  ``with`` does not call ``__exit__`` after a failed ``__enter__``:
        without this every failed ``with`` would leave a thread and its event loop running for good.  (A
        second start of a running consumer raises without stopping anything.)"""
        try:
            self._call(consumer.start())
        except BaseException:
            if consumer.stopping:
                self._stop_loop()
            raise


class BlockingPushConsumer(_LoopThread):
    def __init__(self, namesrv_addr: str, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
                 settings: PushConsumerSettings | None = None, *, call_timeout_s: float = 60.0,
                 credentials: SessionCredentials | None = None, tls: ClientTls = None,
                 **settings_kw: object) -> None:
        super().__init__(f"push-consumer-{group}", call_timeout_s)
        try:
            self.consumer: PushConsumer = self._call(self._create(namesrv_addr, group, subscriptions, handler,
                                                                 settings, credentials, tls, settings_kw))
        except BaseException:
            self._stop_loop()
            raise

    @staticmethod
    async def _create(namesrv_addr: str, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
                      settings: PushConsumerSettings | None, credentials: SessionCredentials | None,
                      tls: ClientTls, settings_kw: dict[str, object]) -> PushConsumer:
        return PushConsumer(namesrv_addr, group, subscriptions, handler, settings, credentials=credentials,
                            tls=tls, **settings_kw)

    @property
    def client_id(self) -> str:
        return self.consumer.client_id

    def start(self) -> None:
        self._start(self.consumer)

    def shutdown(self) -> None:
        """Stop consuming, wait for the handlers in progress, commit offsets.  Called from one of this
        consumer's handlers it returns at once (the handler is one of those waited for)."""
        self._stop(self.consumer.shutdown, threading.get_ident() in self.consumer.handler_threads)

    def assignment(self, topic: str | None = None) -> set[MessageQueue]:
        return self._call_sync(lambda: self.consumer.assignment(topic))

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._call_sync(lambda: self.consumer.subscribe(topic, expression))

    def unsubscribe(self, topic: str) -> None:
        self._call_sync(lambda: self.consumer.unsubscribe(topic))

    def suspend(self) -> None:
        self._call_sync(self.consumer.suspend)

    def resume(self) -> None:
        self._call_sync(self.consumer.resume)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class BlockingLitePullConsumer(_LoopThread):
    """:class:`LitePullConsumer` for code without an event loop; ``with`` starts and closes it."""

    def __init__(self, namesrv_addr: str, group: str, settings: LitePullConsumerSettings | None = None, *,
                 call_timeout_s: float = 60.0, credentials: SessionCredentials | None = None,
                 tls: ClientTls = None, **settings_kw: object) -> None:
        super().__init__(f"lite-pull-consumer-{group}", call_timeout_s)
        try:
            self.consumer: LitePullConsumer = self._call_sync(lambda: LitePullConsumer(
                namesrv_addr, group, settings, credentials=credentials, tls=tls, **settings_kw))
        except BaseException:
            self._stop_loop()
            raise

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self._start(self.consumer)

    def close(self) -> None:
        self._stop(self.consumer.close, False)

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._call_sync(lambda: self.consumer.subscribe(topic, expression))

    def unsubscribe(self, topic: str) -> None:
        self._call_sync(lambda: self.consumer.unsubscribe(topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        wanted = list(queues)
        self._call_sync(lambda: self.consumer.assign(wanted))

    def assignment(self, topic: str | None = None) -> set[MessageQueue]:
        return self._call_sync(lambda: self.consumer.assignment(topic))

    def poll(self, timeout_s: float = 5.0) -> list[ConsumedMessage]:
        return self._call(self.consumer.poll(timeout_s), extra_timeout_s=max(timeout_s, 0.0))

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        wanted = list(queues)
        self._call_sync(lambda: self.consumer.pause(wanted))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        wanted = list(queues)
        self._call_sync(lambda: self.consumer.resume(wanted))

    def commit_sync(self) -> None:
        self._call(self.consumer.commit_sync())

    def committed(self, mq: MessageQueue) -> int:
        return self._call(self.consumer.committed(mq))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._call(self.consumer.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        self._call(self.consumer.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        self._call(self.consumer.seek_to_end(mq))

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self.consumer.fetch_message_queues(topic))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._call(self.consumer.offset_for_timestamp(mq, timestamp_ms))

    def register_topic_message_queue_change_listener(
            self, topic: str, listener: Callable[[str, frozenset[MessageQueue]], None]) -> None:
        """*listener* runs on the consumer's loop thread: keep it short, and do not call back into this
        consumer from it (that waits for the thread it runs on)."""
        self._call(self.consumer.register_topic_message_queue_change_listener(topic, listener))

    def check_topic_queues(self) -> None:
        self._call(self.consumer.check_topic_queues())
