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
waiting for it again: the setting ``await_termination_when_shutdown_s`` bounds that wait instead).
Thread-safe: start / shutdown / assignment may be called from any thread, but not from the consumer's own
loop thread (an async handler, a listener) nor from a forked child: RuntimeError.
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

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Self

from rocketstore.client.consumer import MessageSelector
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ServiceState, state_not_ok
from rocketstore.client.lite_pull_consumer import (
    NOT_RUNNING_MESSAGE,
    ConsumerNotRunningError,
    LitePullConsumer,
    LitePullConsumerSettings,
)
from rocketstore.client.loop_thread import LoopThread
from rocketstore.client.push_consumer import PushConsumer, PushConsumerSettings
from rocketstore.client.push_types import ConsumedMessage, MessageHandler
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.tls import ClientTls

__all__ = ["BlockingLitePullConsumer", "BlockingPushConsumer"]


class _LoopThread(LoopThread):
    """The consumers' loop thread (see :mod:`rocketstore.client.loop_thread`): a call after shutdown raises
    ConsumerNotRunningError."""

    not_running_error = ConsumerNotRunningError
    consumer: PushConsumer | LitePullConsumer

    @property
    def service_state(self) -> ServiceState:
        """The consumer's :attr:`~rocketstore.client.group_consumer.GroupConsumer.service_state`."""
        return self.consumer.service_state

    @property
    def is_running(self) -> bool:
        """The consumer is started and not shut down (4.9.3's isRunning)."""
        return self.consumer.is_running


class BlockingPushConsumer(_LoopThread):
    shut_down_words = state_not_ok("consumer", "SHUTDOWN_ALREADY")  # DefaultMQPushConsumerImpl.makeSureStateOK

    def __init__(self, namesrv_addr: str | None, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
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
    async def _create(namesrv_addr: str | None, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
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

    shut_down_words = NOT_RUNNING_MESSAGE  # DefaultLitePullConsumerImpl.checkServiceState

    def __init__(self, namesrv_addr: str | None, group: str, settings: LitePullConsumerSettings | None = None, *,
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

    def poll(self, timeout_s: float | None = None) -> list[ConsumedMessage]:
        wait_s = self.consumer.settings.poll_timeout_s if timeout_s is None else timeout_s
        return self._call(self.consumer.poll(wait_s), extra_timeout_s=max(wait_s, 0.0))

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
