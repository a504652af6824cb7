"""A push consumer for code without an event loop: :class:`PushConsumer` on a loop in its own thread.

    def handle(messages):
        for m in messages:
            print(m.topic, m.queue_id, m.queue_offset, m.body)
        return ConsumeStatus.CONSUME_SUCCESS

    with BlockingPushConsumer("127.0.0.1:9876", "my-group", {"TopicA": "*"}, handle) as consumer:
        time.sleep(60)

The handler runs on the consumer's thread pool (an async handler on the consumer's loop).  ``start()``
returns once the first rebalance is done; ``shutdown()`` returns once in-flight handlers finished and
offsets were committed.  Thread-safe: start / shutdown / assignment may be called from any thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, Self, TypeVar

from rocketstore.client.consumer import MessageSelector
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.push_consumer import PushConsumer, PushConsumerSettings
from rocketstore.client.push_types import MessageHandler
from rocketstore.client.route import MessageQueue
from rocketstore.remoting.transport import new_event_loop

__all__ = ["BlockingPushConsumer"]

T = TypeVar("T")


class BlockingPushConsumer:
    def __init__(self, namesrv_addr: str, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
                 settings: PushConsumerSettings | None = None, *, call_timeout_s: float = 60.0,
                 credentials: SessionCredentials | None = None, **settings_kw: object) -> None:
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"push-consumer-{group}", daemon=True)
        self._call_timeout_s = call_timeout_s
        self._thread.start()
        try:
            self.consumer: PushConsumer = self._call(self._create(namesrv_addr, group, subscriptions, handler,
                                                                 settings, credentials, settings_kw))
        except BaseException:
            self._stop_loop()
            raise

    @staticmethod
    async def _create(namesrv_addr: str, group: str, subscriptions: Mapping[str, str | MessageSelector], handler: MessageHandler,
                      settings: PushConsumerSettings | None, credentials: SessionCredentials | None,
                      settings_kw: dict[str, object]) -> PushConsumer:
        return PushConsumer(namesrv_addr, group, subscriptions, handler, settings, credentials=credentials,
                            **settings_kw)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self._call_timeout_s)

    @property
    def client_id(self) -> str:
        return self.consumer.client_id

    def start(self) -> None:
        self._call(self.consumer.start())

    def shutdown(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._call(self.consumer.shutdown())
        finally:
            self._stop_loop()

    def assignment(self, topic: str | None = None) -> set[MessageQueue]:
        async def get() -> set[MessageQueue]:
            return self.consumer.assignment(topic)

        return self._call(get())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()
