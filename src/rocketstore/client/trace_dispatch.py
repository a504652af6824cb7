"""Sending trace records in the background (RocketMQ 4.9.3's AsyncTraceDispatcher): the traced client
appends :class:`TraceContext` values, which never waits or fails; a worker task gathers them into batches
and sends each batch as one message to the trace topic with a producer of its own.

What is kept from 4.9.3, and why:

* At most ``queue_limit`` (1024) contexts wait; beyond that new ones are dropped and counted
  (``discarded``), so a broker that cannot take trace data never slows down or fills up the traced client.
* A batch is up to ``batch_size`` (100) contexts; the worker lingers ``linger_s`` (5 ms, Java's poll
  timeout) for a batch to fill when fewer are waiting.  Within a batch, contexts of the same traced topic
  and region go out together, cut into messages of about ``max_message_chars`` (118,000: Java's 128,000
  maxMsgSize less 10,000) characters, and before their KEYS pass ``max_keys_bytes`` (32,000; beyond
  4.9.3, whose trace message with more keys than a broker's 32,767-byte properties limit is refused).
* The trace message's KEYS are the traced msgIds and keys (:func:`trace_keys`), so that a query by key
  in the trace topic finds it; its topic is ``trace_topic`` (default RMQ_SYS_TRACE_TOPIC).
* The producer's group is ``_INNER_TRACE_PRODUCER-<group>-<PRODUCE|CONSUME>-<n>`` (genGroupNameForTrace);
  sends time out after 5 s and are retried as any send is; a failed send is logged and forgotten; at most
  ``max_in_flight`` (16) trace messages are in flight, so a slow broker fills the bounded queue, not memory.
* :meth:`TraceDispatcher.close` sends what is still waiting and waits for the sends in flight (each bounded
  by its timeout), then closes the producer: a client's shutdown flushes its trace.

Loop-bound: append and close on the loop the traced client runs on (the worker starts on the first append).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Iterable
from typing import Literal

from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.producer import Producer
from rocketstore.client.trace import (
    CONTENT_SEPARATOR,
    RMQ_SYS_TRACE_TOPIC,
    TRACE_GROUP_PREFIX,
    TraceContext,
    encode_trace_context,
    trace_keys,
)
from rocketstore.errors import RocketStoreError
from rocketstore.remoting.tls import ClientTls

__all__ = ["TraceDispatcher", "trace_group_name"]

log = logging.getLogger(__name__)

_GROUP_COUNTER = itertools.count(1)


def trace_group_name(group: str, kind: Literal["PRODUCE", "CONSUME"]) -> str:
    """The trace producer's group for a traced client of *group* (AsyncTraceDispatcher.genGroupNameForTrace:
    prefix, group, dispatcher type, a process-wide counter)."""
    return f"{TRACE_GROUP_PREFIX}-{group}-{kind}-{next(_GROUP_COUNTER)}"


class TraceDispatcher:
    """The trace data of one traced client.  Loop-bound; :meth:`append` may be called from the loop only."""

    def __init__(self, namesrv_addr: str, group: str, kind: Literal["PRODUCE", "CONSUME"], *,
                 trace_topic: str | None = None, credentials: SessionCredentials | None = None,
                 queue_limit: int = 1024, batch_size: int = 100, max_message_chars: int = 118_000,
                 linger_s: float = 0.005, send_timeout_s: float = 5.0, max_in_flight: int = 16,
                 tls: ClientTls = None, max_keys_bytes: int = 32_000, namesrv_domain: str | None = None,
                 namesrv_domain_subgroup: str | None = None) -> None:
        """*trace_topic*: where trace messages go (None or blank: RMQ_SYS_TRACE_TOPIC); *credentials*: the
        traced client's ACL keys, which the trace producer signs with too; *tls*: the traced client's TLS
        switch, which the trace producer connects with too; *max_keys_bytes*: the most UTF-8 bytes the KEYS
        of one trace message take (the broker's properties limit is 32,767 bytes, the rest is left for the
        trace message's other properties); *namesrv_domain* / *namesrv_domain_subgroup*: the traced client's
        address server, which the trace producer reads its name servers from too when given none."""
        if queue_limit < 1 or batch_size < 1 or max_message_chars < 1 or max_in_flight < 1 or max_keys_bytes < 1:
            raise ValueError("queue_limit, batch_size, max_message_chars, max_in_flight and max_keys_bytes must be "
                             "at least 1")
        self.trace_topic = trace_topic.strip() if trace_topic and trace_topic.strip() else RMQ_SYS_TRACE_TOPIC
        self.group = trace_group_name(group, kind)
        self.queue_limit = queue_limit
        self.batch_size = batch_size
        self.max_message_chars = max_message_chars
        self.max_keys_bytes = max_keys_bytes
        self.linger_s = linger_s
        self.send_timeout_s = send_timeout_s
        #: trace messages being sent at most at once (Java bounds its trace executor's queue); past this the
        #: worker waits and new contexts pile up in the queue, where the limit drops them
        self.max_in_flight = max_in_flight
        self.producer = Producer(namesrv_addr, self.group, timeout_s=send_timeout_s, credentials=credentials,
                                 tls=tls, namesrv_domain=namesrv_domain,
                                 namesrv_domain_subgroup=namesrv_domain_subgroup)
        #: contexts appended beyond queue_limit (dropped), and trace messages whose send failed
        self.discarded = 0
        self.failed_sends = 0
        #: trace messages sent (answered by a broker)
        self.sent_messages = 0
        self._waiting: deque[TraceContext] = deque()
        self._arrived = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self._closing = False
        self._closed = False

    def append(self, ctx: TraceContext) -> bool:
        """Queue *ctx* for sending; False (and counted in ``discarded``) when the queue is full or the
        dispatcher closed.  Never raises for a full queue, never waits."""
        if self._closing or len(self._waiting) >= self.queue_limit:
            self.discarded += 1
            log.debug("trace queue full or closed: context dropped (%d so far)", self.discarded)
            return False
        self._waiting.append(ctx)
        self._arrived.set()
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._run())
        return True

    async def close(self) -> None:
        """Send what is waiting, wait for the sends in flight (each bounded by the send timeout and its
        retries), close the trace producer.  Later appends are dropped."""
        if self._closed:
            return
        self._closing = True
        self._arrived.set()
        if self._worker is not None:
            await asyncio.gather(self._worker, return_exceptions=True)
        if self._sending:
            await asyncio.wait(set(self._sending))
        self._closed = True
        await self.producer.close()

    # --- the worker ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self._waiting:
                if self._closing:
                    return
                self._arrived.clear()
                await self._arrived.wait()
                continue
            if len(self._waiting) < self.batch_size and not self._closing:
                await asyncio.sleep(self.linger_s)  # let a batch fill, as Java's 5 ms poll does
            count = min(self.batch_size, len(self._waiting))
            batch = [self._waiting.popleft() for _ in range(count)]
            for data, keys in self._messages(batch):
                while len(self._sending) >= self.max_in_flight:  # a slow broker: wait, and let the queue drop
                    await asyncio.wait(set(self._sending), return_when=asyncio.FIRST_COMPLETED)
                task = asyncio.get_running_loop().create_task(self._send(data, keys))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)

    def _messages(self, batch: Iterable[TraceContext]) -> list[tuple[str, list[str]]]:
        """(body, keys) of the trace messages for *batch*: contexts grouped by traced topic and region (in
        the order the groups first appear), each group cut once its text reaches max_message_chars, and
        before a record whose keys would take the message's KEYS past max_keys_bytes (a broker refuses a
        message whose properties pass 32,767 bytes, and with it every record it carries; 4.9.3 does not
        cut there).  A single record with more keys than that keeps the first ones that fit."""
        groups: dict[str, list[tuple[str, list[str]]]] = {}
        for ctx in batch:
            if not ctx.beans:
                continue
            try:
                data = encode_trace_context(ctx)
            except ValueError as exc:  # e.g. a tag with a separator character: that record cannot be written
                log.warning("trace record dropped: %s", exc)
                self.discarded += 1
                continue
            region = ctx.region_id or ""
            key = ctx.beans[0].topic + (CONTENT_SEPARATOR + region if region.strip() else "")
            groups.setdefault(key, []).append((data, trace_keys(ctx)))
        messages: list[tuple[str, list[str]]] = []
        for records in groups.values():
            parts: list[str] = []
            keys: dict[str, None] = {}
            size = keys_bytes = 0
            for data, record_keys in records:
                # each key's bytes in KEYS (UTF-8 plus its separator), counted once
                sizes = {k: len(k.encode("utf-8", "surrogatepass")) + 1 for k in record_keys}
                fresh = [k for k in sizes if k not in keys]
                if parts and keys_bytes + sum(sizes[k] for k in fresh) > self.max_keys_bytes:  # cut here
                    messages.append(("".join(parts), list(keys)))
                    parts, keys, size, keys_bytes = [], {}, 0, 0
                    fresh = list(sizes)  # the new message needs those the last one had too
                parts.append(data)
                for k in fresh:  # a record whose keys alone are too many keeps those that fit (msgIds first)
                    k_bytes = sizes[k]
                    if keys_bytes + k_bytes <= self.max_keys_bytes:
                        keys[k] = None
                        keys_bytes += k_bytes
                size += len(data)
                if size >= self.max_message_chars:
                    messages.append(("".join(parts), list(keys)))
                    parts, keys, size, keys_bytes = [], {}, 0, 0
            if parts:
                messages.append(("".join(parts), list(keys)))
        return messages

    async def _send(self, data: str, keys: list[str]) -> None:
        try:
            await self.producer.send(self.trace_topic, data.encode("utf-8"), keys=keys)
            self.sent_messages += 1
        except (RocketStoreError, OSError, TimeoutError) as exc:
            self.failed_sends += 1
            log.warning("trace data not sent to %s: %s", self.trace_topic, exc)
