"""Blocking access to a running broker for the Spark ``rocketmq`` source and sink, free of pyspark.

Spark calls data sources from plain threads (the driver's planner worker, executor tasks), while the
client is asyncio; :class:`BrokerSession` owns a private event loop and runs each client call to
completion on it, so one session serves one thread at a time (not thread-safe).

The sink chooses each message's UNIQ_KEY (a replayed Spark batch must produce the same keys): the producer's
public ``send`` / ``send_batch`` keep a UNIQ_KEY the properties hold, as Java's setUniqID keeps one set.

Imports the client, message and remoting packages only (never store, broker or pyspark).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from rocketstore.client import (
    MessageQueue,
    MessageSelector,
    OutgoingMessage,
    Producer,
    PullConsumer,
    PullResult,
    RouteCache,
    SendResult,
    SessionCredentials,
)
from rocketstore.client.errors import ClientError
from rocketstore.message.properties import PropertyName
from rocketstore.remoting import fastjson
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig
from rocketstore.remoting.transport import new_event_loop

__all__ = ["SEND_OK", "BrokerSession", "OutgoingRecord", "SendRefusedError"]

T = TypeVar("T")
SEND_OK = "SEND_OK"


class SendRefusedError(ClientError):
    """The broker stored a message but did not answer SEND_OK (FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE...)."""

    def __init__(self, status: str, topic: str, uniq_keys: str) -> None:
        self.status = status
        self.topic = topic
        super().__init__(f"broker answered {status} for a send to topic {topic!r} (UNIQ_KEY {uniq_keys})")


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """One message as the sink sends it; ``properties`` already hold TAGS / KEYS / UNIQ_KEY.  ``row`` is its
    row's index in the task's partition (the sink's errors name it); ``flag`` the message's flag (Java's
    Message.getFlag)."""

    body: bytes
    properties: dict[str, str]
    row: int
    flag: int = 0

    @property
    def uniq_key(self) -> str:
        return self.properties[PropertyName.UNIQ_KEY]


class BrokerSession:
    """A producer and a pull consumer on a private event loop; close() when done."""

    def __init__(self, name_server: str, group: str, *, timeout_s: float = 5.0,
                 credentials: SessionCredentials | None = None, tls: TlsConfig | None = None) -> None:
        self.name_server = name_server
        self.group = group
        self.timeout_s = timeout_s
        self.credentials = credentials
        #: the clients' TLS (the source's and sink's useTLS / tls.client.* options; None: the process's)
        self.tls = tls
        self._loop = new_event_loop()
        self._consumer: PullConsumer | None = None
        self._producer: Producer | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(asyncio.wait_for(coro, self.timeout_s * 4))

    @property
    def consumer(self) -> PullConsumer:
        if self._consumer is None:
            async def make() -> PullConsumer:  # the pool binds to the running loop
                return PullConsumer(self.name_server, self.group, timeout_s=self.timeout_s,
                                    credentials=self.credentials, tls=self.tls)

            self._consumer = self._loop.run_until_complete(make())
        return self._consumer

    @property
    def producer(self) -> Producer:
        if self._producer is None:
            async def make() -> Producer:
                return Producer(self.name_server, self.group, timeout_s=self.timeout_s, credentials=self.credentials,
                                tls=self.tls)

            self._producer = self._loop.run_until_complete(make())
        return self._producer

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            for client in (self._consumer, self._producer):
                if client is not None:
                    self._loop.run_until_complete(client.close())
        finally:
            self._consumer = self._producer = None
            self._loop.close()

    def expire_routes(self) -> None:
        """The next call asks the name servers for its topic's route again (a broker may have moved); the
        cached routes stay in use while the name servers cannot be reached."""
        for client in (self._consumer, self._producer):
            if client is not None:
                client.routes.expire()

    # --- look-ups ---------------------------------------------------------------------------------------

    def topics(self) -> list[str]:
        """Every topic the name server knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        consumer = self.consumer

        async def go() -> list[str]:
            last: Exception | None = None
            for addr in consumer.routes.namesrv_addrs:
                request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})
                try:
                    response = await consumer.pool.request(addr, request, self.timeout_s)
                except Exception as exc:  # noqa: BLE001 - try the next name server, re-raised below
                    last = exc
                    continue
                if response.code == ResponseCode.SUCCESS:
                    return sorted(fastjson.loads(response.body).get("topicList", []))
                last = ClientError(f"name server {addr} answered {response.code}: {response.remark}")
            raise ClientError(f"cannot list topics from {self.name_server}: {last}") from last

        return self._run(go())

    def queues(self, topic: str) -> list[MessageQueue]:
        return self._run(self.consumer.queues(topic))

    def queues_if_known(self, topic: str) -> list[MessageQueue] | None:
        """The readable queues of *topic*; None when the name servers answer that they do not know it.

        Unlike :meth:`queues`, a name server that cannot be reached (or answers another error) raises
        instead of looking like a topic that does not exist yet."""
        consumer = self.consumer

        async def go() -> list[MessageQueue] | None:
            route = await consumer.routes.fetch(topic)
            return None if route is None else RouteCache.subscribe_queues(topic, route)

        return self._run(go())

    def min_offset(self, mq: MessageQueue) -> int:
        return self._run(self.consumer.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return self._run(self.consumer.max_offset(mq))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._run(self.consumer.search_offset(mq, timestamp_ms))

    def committed_offset(self, mq: MessageQueue, default: int = -1) -> int:
        return self._run(self.consumer.committed_offset(mq, default))

    def commit_offsets(self, offsets: dict[MessageQueue, int]) -> None:
        consumer = self.consumer  # made here: inside go() the loop is running and cannot make it

        async def go() -> None:
            for mq, offset in offsets.items():
                await consumer.commit_offset(mq, offset)

        self._run(go())

    def pull(self, mq: MessageQueue, offset: int, max_count: int, expression: str | MessageSelector) -> PullResult:
        """One pull; MessageDecodeError naming the first message whose compressed body does not inflate (a
        batch job fails on it rather than read past it: rows silently missing would be wrong data)."""
        result = self._run(self.consumer.pull(mq, offset, max_count, expression=expression))
        if result.undecodable:
            raise result.undecodable[0].error()
        return result

    # --- sending ----------------------------------------------------------------------------------------

    def send(self, topic: str, records: list[OutgoingRecord], queue_id: int | None = None) -> SendResult:
        """Send *records* (one topic) as one message or one batch; SendRefusedError unless SEND_OK.

        Goes through the producer's public ``send`` / ``send_batch``, which keep the UNIQ_KEY a message's
        properties hold: the checks Java's producer makes (topic, empty or too large body, a batch with a
        delay level or for a retry topic, mixed WAITs), a batch's own WAIT, and a send to a %RETRY% topic
        moving RECONSUME_TIME / MAX_RECONSUME_TIMES into its header, as DefaultMQProducerImpl does.
        """
        producer = self.producer
        keys = ",".join(r.uniq_key for r in records)
        if len(records) == 1:
            r = records[0]
            coro = producer.send(topic, r.body, properties=dict(r.properties), queue_id=queue_id, flag=r.flag)
        else:  # each message's flag goes in the batch's body, as Java's batch encodes it
            coro = producer.send_batch(topic, [OutgoingMessage(r.body, properties=dict(r.properties), flag=r.flag)
                                               for r in records], queue_id=queue_id)
        result = self._run(coro)
        if result.status != SEND_OK:
            raise SendRefusedError(result.status, topic, keys)
        return result
