"""Handing pulled messages to the user's handler: concurrently or in order (RocketMQ's
ConsumeMessageConcurrentlyService and ConsumeMessageOrderlyService).

Concurrently: each batch of ``consume_batch_size`` messages is handled on its own, at most
``consume_concurrency`` at once.  RECONSUME_LATER (or an exception) in CLUSTERING gives each message back
to the broker (CONSUMER_SEND_MSG_BACK, delay level 0 so the broker picks ``3 + reconsumeTimes``; if that
fails, a copy is sent to the retry topic; if that fails too, the message stays held and is handled here
again after ``local_retry_delay_s``).  In BROADCASTING a failed message is dropped, as Java does.  The
queue's offset moves to the smallest message still held.  The handler's ConcurrentlyContext (see
:func:`rocketstore.client.push_types.current_context`) may acknowledge only the first messages of a
successful batch (``ack_index``: the rest are handled as failed) and choose the send-backs' delay level
(``delay_level_when_next_consume``; -1 sends them straight to the DLQ).

Orderly: one task per queue handles one batch at a time, in offset order, only while the queue's broker
lock is held (CLUSTERING).  RECONSUME_LATER suspends the queue for ``suspend_current_queue_s`` and handles
the same messages again with their reconsume count raised; a message past ``max_reconsume_times`` is sent
to the retry topic with that count, which the broker turns into a DLQ message.  The handler's OrderlyContext
may set the pause (``suspend_current_queue_s``; either pause is kept within 0.01 .. 30 s, as 4.9.3's
submitConsumeRequestLater) and turn ``auto_commit`` off (the batch is consumed but not committed until a
later batch returning COMMIT, or successful with ``auto_commit`` on, commits everything consumed so far, or
one returning ROLLBACK puts all of it back and suspends the queue).

Sync handlers run on a thread pool, async ones on the loop.  Loop-bound.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import math
import operator
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from rocketstore.client.namespace import queues_without_namespace
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_types import (
    ACK_ALL,
    ConcurrentlyContext,
    ConsumedMessage,
    ConsumeStatus,
    MessageHandler,
    OrderlyContext,
    current_context,
    handler_context,
)
from rocketstore.client.route import MessageQueue
from rocketstore.client.send_back import resend_to_retry_topic, send_back
from rocketstore.errors import RocketStoreError
from rocketstore.remoting.consumer_bodies import CMResult, ConsumeMessageDirectlyResult
from rocketstore.repeats import FailureRun

if TYPE_CHECKING:
    from rocketstore.client.push_consumer import PushConsumer

__all__ = ["Consumption"]

log = logging.getLogger(__name__)

#: how long an orderly queue whose lock could not be taken waits before trying again (Java: 3 s)
RELOCK_WAIT_S = 3.0
#: the bounds an orderly queue's suspension is kept within (submitConsumeRequestLater: 10 .. 30000 ms)
SUSPEND_MIN_S, SUSPEND_MAX_S = 0.01, 30.0
#: the statuses only an orderly handler with auto_commit off acts on (ConsumeOrderlyStatus COMMIT, ROLLBACK)
_ORDERLY_ONLY = frozenset({ConsumeStatus.COMMIT, ConsumeStatus.ROLLBACK})
#: what a handler may return (a ConsumeStatus, or its value as a plain string)
_STATUS_VALUES = frozenset(status.value for status in ConsumeStatus)


def _as_int(value: object) -> int | None:
    """*value* as an int (an int, or an integral such as numpy's), None for anything else (a bool too)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _is_seconds(value: object) -> bool:
    """*value* is a number of seconds min / max can bound (not a bool, a str, or NaN)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _being_cancelled() -> bool:
    """The running task has been asked to stop (Task.cancel), rather than merely seeing a CancelledError."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Consumption:
    """The consume side of one PushConsumer.  Loop-bound."""

    def __init__(self, pc: PushConsumer, handler: MessageHandler, executor: ThreadPoolExecutor) -> None:
        self.pc = pc
        self.handler = handler
        self.executor = executor
        self._semaphore = asyncio.Semaphore(pc.settings.consume_concurrency)
        call = getattr(handler, "__call__", None)  # noqa: B004 - an object with an async __call__ counts
        self._is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)
        self._queued: set[asyncio.Task[None]] = set()  # waiting for a consume slot
        self._running: set[asyncio.Task[None]] = set()  # in a handler or processing its result
        self._delayed: set[asyncio.Task[None]] = set()  # local retries waiting out their delay
        self._orderly: dict[MessageQueue, tuple[ProcessQueue, asyncio.Task[None]]] = {}
        #: handler calls made (successful or not)
        self.calls = 0
        #: exception class name -> handler calls that raised it: the first of each and every 1000th after it
        #: are logged with the traceback, the others as a debug line (a handler failing on every message
        #: would otherwise write a traceback per message, again at each redelivery)
        self.handler_failures: dict[str, FailureRun] = {}
        #: handler calls that returned no ConsumeStatus (None: a forgotten return), logged as the failures
        self.bad_returns = FailureRun()
        #: handler calls that left a context field of the wrong type (taken as not set), logged as the failures
        self.bad_context = FailureRun()
        #: give-backs that failed with an exception nobody foresaw (the message is handled here again)
        self.unforeseen_failures = FailureRun()

    # --- queue life cycle ------------------------------------------------------------------------------

    def queue_added(self, pq: ProcessQueue) -> None:
        if self.pc.orderly:
            task = asyncio.get_running_loop().create_task(self._orderly_loop(pq))
            self._orderly[pq.mq] = (pq, task)

    def queue_removed(self, pq: ProcessQueue) -> None:
        entry = self._orderly.pop(pq.mq, None)
        if entry is not None and entry[0] is pq:
            entry[1].cancel()

    def dispatch(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        """New messages are held by *pq*: concurrently, start their batches; orderly, the queue's task
        picks them up."""
        if self.pc.orderly:
            return
        size = self.pc.settings.consume_batch_size
        for i in range(0, len(messages), size):
            self._submit(pq, messages[i : i + size])

    def _submit(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        task = asyncio.get_running_loop().create_task(self._consume_concurrently(pq, messages))
        self._queued.add(task)
        task.add_done_callback(self._queued.discard)

    async def stop(self, wait_s: float | None = None) -> None:
        """Drop what has not started (it stays unacknowledged, so it is pulled again by whoever owns the
        queue next) and wait for the handlers in progress, at most *wait_s* (None: as long as they take).
        Past it the handlers still running are abandoned: their tasks are cancelled (an async handler with
        them; a sync one's thread cannot be stopped and runs on, its result unused), so their messages
        are neither committed nor sent back: the queue's committed offset stays before them."""
        for task in self._delayed | self._queued:
            task.cancel()
        try:
            async with asyncio.timeout(wait_s):
                for pq, task in list(self._orderly.values()):
                    async with pq.consume_lock:  # the batch in hand finishes and commits first
                        task.cancel()
                orderly = [t for _, t in self._orderly.values()]
                await asyncio.gather(*self._delayed, *self._queued, *self._running, *orderly,
                                     return_exceptions=True)
        except TimeoutError:
            busy = [*self._running, *(t for _, t in self._orderly.values() if not t.done())]
            log.warning("%s: shutdown abandons %d handler call(s) still running after %s s; their messages "
                        "are not committed and will be handled again", self.pc.group, len(busy), wait_s)
            for task in busy:
                task.cancel()
            await asyncio.gather(*busy, return_exceptions=True)
        self._orderly.clear()

    def in_handler(self) -> bool:
        """The running task is one that calls this consumer's handler (an async handler runs in it):
        a concurrent batch's, or an orderly queue's loop."""
        task = asyncio.current_task()
        return task in self._running or any(task is t for _, t in self._orderly.values())

    # --- calling the handler -----------------------------------------------------------------------------

    async def call_handler(self, messages: list[ConsumedMessage], topic: str) -> ConsumeStatus:
        """The handler's verdict; an exception or anything but CONSUME_SUCCESS is RECONSUME_LATER (a result
        that is no ConsumeStatus at all, such as None, with a warning), but for an orderly handler's COMMIT and
        ROLLBACK with ``auto_commit`` off (on, they are CONSUME_SUCCESS, as 4.9.3's processConsumeResult takes
        them).  The call counts in the consumer's figures for *topic* (the queue's topic, a retry topic for
        retries); COMMIT and ROLLBACK count neither consumed nor failed messages, as in 4.9.3."""
        self.calls += 1
        began = time.monotonic()
        try:
            result = await self._run_handler(messages)
        except Exception as exc:
            self._handler_failed(exc, len(messages))
            result = ConsumeStatus.RECONSUME_LATER
        except asyncio.CancelledError as exc:
            if _being_cancelled():  # stop() abandons this call: its messages stay unacknowledged
                raise
            # the handler's own (it awaited something cancelled elsewhere): a failure like any other, as
            # 4.9.3 takes any Throwable; let through, it would end this task and strand the batch for good
            self._handler_failed(exc, len(messages))
            result = ConsumeStatus.RECONSUME_LATER
        if not (isinstance(result, str) and result in _STATUS_VALUES):
            self._returned_no_status(result, len(messages))
        context = current_context()
        self._check_context(context)
        status = ConsumeStatus.CONSUME_SUCCESS if result == ConsumeStatus.CONSUME_SUCCESS else \
            ConsumeStatus.RECONSUME_LATER
        if isinstance(result, str) and result in _ORDERLY_ONLY:
            if not isinstance(context, OrderlyContext):
                log.warning("handler of group %s returned %s, which only an orderly handler may: taken as %s",
                            self.pc.group, result, status)
            elif context.auto_commit:
                log.warning("handler of group %s returned %s with auto_commit on at %s: taken as %s",
                            self.pc.group, result, context.message_queue, ConsumeStatus.CONSUME_SUCCESS)
                status = ConsumeStatus.CONSUME_SUCCESS
            else:
                status = ConsumeStatus(result)
        ok = failed = 0
        if status is ConsumeStatus.CONSUME_SUCCESS:
            ok = context.acked(len(messages)) if isinstance(context, ConcurrentlyContext) else len(messages)
            failed = len(messages) - ok
        elif status is ConsumeStatus.RECONSUME_LATER:
            failed = len(messages)
        self.pc.stats.consumed(topic, (time.monotonic() - began) * 1000, ok, failed)
        return status

    def _returned_no_status(self, result: object, count: int) -> None:
        """4.9.3 warns of a listener returning null (and retries its messages); else the user would see
        them come back, then land in the DLQ, with no word of why."""
        if self.bad_returns.failed(logging.WARNING) == logging.WARNING:
            log.warning("handler of group %s returned %r for %d message(s), not a ConsumeStatus: taken as %s "
                        "(%d time(s) so far)", self.pc.group, result, count, ConsumeStatus.RECONSUME_LATER,
                        self.bad_returns.count)

    def _check_context(self, context: ConcurrentlyContext | OrderlyContext | None) -> None:
        """Reset to its default (not set) a field the handler set to a value of the wrong type, with a
        warning: used as it was, it raised after the handler, ending the consume task with its batch held for
        good.  (4.9.3's fields are ints, so a Java user cannot get there.)"""
        if isinstance(context, ConcurrentlyContext):
            if type(context.ack_index) is not int:
                context.ack_index = self._int_field("ack_index", context.ack_index, ACK_ALL)
            if type(context.delay_level_when_next_consume) is not int:
                context.delay_level_when_next_consume = self._int_field(
                    "delay_level_when_next_consume", context.delay_level_when_next_consume, 0)
        elif isinstance(context, OrderlyContext):
            pause = context.suspend_current_queue_s
            if pause is not None and not _is_seconds(pause):
                self._bad_context_field("suspend_current_queue_s", pause, "a number of seconds", None)
                context.suspend_current_queue_s = None

    def _int_field(self, name: str, value: object, default: int) -> int:
        index = _as_int(value)
        if index is None:
            self._bad_context_field(name, value, "an int", default)
            return default
        return index

    def _bad_context_field(self, name: str, value: object, expected: str, default: object) -> None:
        if self.bad_context.failed(logging.WARNING) == logging.WARNING:
            log.warning("handler of group %s set its context's %s to %r, which is not %s: taken as not set (%r) "
                        "(%d time(s) so far)", self.pc.group, name, value, expected, default,
                        self.bad_context.count)

    def _handler_failed(self, exc: BaseException, count: int) -> None:
        name = type(exc).__qualname__
        run = self.handler_failures.get(name) or self.handler_failures.setdefault(name, FailureRun())
        if run.failed(logging.ERROR) == logging.ERROR:
            log.error("handler of group %s failed on %d message(s) (%s %d time(s) so far)", self.pc.group,
                      count, name, run.count, exc_info=exc)
        else:
            log.debug("handler of group %s failed on %d message(s): %s: %s (%d time(s) so far)",
                      self.pc.group, count, name, exc, run.count)

    async def _run_handler(self, messages: list[ConsumedMessage]) -> object:
        """What the handler returns for *messages* (a copy of the list, their topics out of the consumer's
        namespace, as 4.9.3's resetNamespace); its exceptions propagate."""
        if self.pc.namespace is not None:
            messages = queues_without_namespace(self.pc.namespace, messages)
        if self._is_async:
            return await self.handler(list(messages))  # type: ignore[misc]
        loop = asyncio.get_running_loop()
        # run_in_executor does not carry context variables over: the copy brings current_context() along
        result = await loop.run_in_executor(self.executor, contextvars.copy_context().run, self.handler,
                                            list(messages))
        if inspect.isawaitable(result):
            result = await result
        return result

    async def consume_directly(self, message: ConsumedMessage) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: hand *message* to the handler outside the queues (an operator
        re-running one message); nothing is committed or sent back whatever the handler says."""
        began = time.monotonic()
        remark: str | None = None
        mq = MessageQueue(message.topic, message.broker_name, message.queue_id)
        context = OrderlyContext(mq) if self.pc.orderly else ConcurrentlyContext(mq)
        try:
            with handler_context(context):  # the handler may set it; nothing follows from it here
                result = await self._run_handler([message])
        except (Exception, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and _being_cancelled():
                raise  # the consumer stops: no answer
            # (a CancelledError of the handler's own is its failure, as in call_handler: answered, not lost)
            log.exception("handler of group %s raised on a directly consumed message", self.pc.group)
            outcome, remark = CMResult.THROW_EXCEPTION, f"{type(exc).__name__}: {exc}"
        else:
            if result is None:
                outcome = CMResult.RETURN_NULL
            elif result == ConsumeStatus.CONSUME_SUCCESS:
                outcome = CMResult.SUCCESS
            elif self.pc.orderly and result == ConsumeStatus.COMMIT:  # the orderly service's CR_COMMIT
                outcome = CMResult.COMMIT
            elif self.pc.orderly and result == ConsumeStatus.ROLLBACK:
                outcome = CMResult.ROLLBACK
            else:
                outcome = CMResult.LATER
        # an orderly handler's auto_commit is reported back (the orderly service's consumeMessageDirectly)
        auto_commit = context.auto_commit if isinstance(context, OrderlyContext) else True
        spent_ms = int((time.monotonic() - began) * 1000)
        return ConsumeMessageDirectlyResult(outcome, order=self.pc.orderly, auto_commit=auto_commit,
                                            remark=remark, spent_time_ms=spent_ms)

    # --- concurrently ------------------------------------------------------------------------------------

    async def _consume_concurrently(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        task = asyncio.current_task()
        assert task is not None
        async with self._semaphore:
            self._queued.discard(task)
            self._running.add(task)
            try:
                await self._consume_batch(pq, messages)
            finally:
                self._running.discard(task)

    async def _consume_batch(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        if pq.dropped:
            return
        began = time.monotonic()
        for m in messages:  # CONSUME_START_TIME: the consume timeout counts from here
            if m.queue_offset in pq.messages:
                pq.consume_started[m.queue_offset] = began
        context = ConcurrentlyContext(pq.mq)
        with handler_context(context):
            status = await self.call_handler(messages, pq.mq.topic)
        if pq.dropped:  # rebalanced away meanwhile: the new owner consumes them again
            return
        # processConsumeResult: the messages after the acknowledged ones failed (all on RECONSUME_LATER)
        acked = context.acked(len(messages)) if status is ConsumeStatus.CONSUME_SUCCESS else 0
        failed = messages[acked:]
        again: list[ConsumedMessage] = []
        if failed:
            if self.pc.clustering:
                for m in failed:
                    if not await self._give_back(m, delay_level=context.delay_level_when_next_consume):
                        again.append(m.with_reconsume_times(m.reconsume_times + 1))
            else:
                log.warning("BROADCASTING drops %d message(s) its handler did not consume", len(failed))
        retried = {m.queue_offset for m in again}
        offset = pq.remove(m for m in messages if m.queue_offset not in retried)
        if offset >= 0 and not pq.dropped:
            self.pc.offsets.update(pq.mq, offset, increase_only=True)
        if again:
            for m in again:  # still held, with the raised count
                if m.queue_offset in pq.messages:
                    pq.messages[m.queue_offset] = m
            task = asyncio.get_running_loop().create_task(self._retry_later(pq, again))
            self._delayed.add(task)
            task.add_done_callback(self._delayed.discard)

    async def _retry_later(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None:
        await asyncio.sleep(self.pc.settings.local_retry_delay_s)
        if not pq.dropped and not self.pc.stopping:
            self._submit(pq, messages)

    async def clean_expired(self, pq: ProcessQueue) -> None:
        """ProcessQueue.cleanExpiredMsg: while the oldest held message's handler has run longer than
        ``consume_timeout_s`` (at most 16 in a row), send it back with delay level 3 and let it go, so that
        a hung handler holds neither the queue's offset nor its flow control (its late result is ignored
        but for a RECONSUME_LATER, which sends it back again, as in 4.9.3)."""
        limit = self.pc.settings.consume_timeout_s
        for _ in range(16):
            if self.pc.orderly or pq.dropped or not pq.messages:
                return
            offset, m = next(iter(pq.messages.items()))
            began = pq.consume_started.get(offset)
            if began is None or time.monotonic() - began <= limit:
                return
            if not await self._give_back(m, delay_level=3):
                return
            log.info("%s: handler of %s at %s offset %d ran over %.0f s: sent back", self.pc.group, m.msg_id,
                     pq.mq, offset, limit)
            if pq.messages and next(iter(pq.messages)) == offset:
                committed = pq.remove([m])
                if committed >= 0 and not pq.dropped:
                    self.pc.offsets.update(pq.mq, committed, increase_only=True)

    async def _give_back(self, m: ConsumedMessage, delay_level: int = 0) -> bool:
        """Send-back, else a copy to the retry topic; False if neither worked (an exception nobody foresaw
        too: logged, and the message handled here again rather than the consume task ended, its batch held
        for good)."""
        try:
            return await self._send_back_or_resend(m, delay_level)
        except Exception as exc:
            self._unforeseen(exc, f"giving {m.msg_id} back")
            return False

    def _unforeseen(self, exc: Exception, what: str) -> None:
        level = self.unforeseen_failures.failed(logging.ERROR)
        log.log(level, "%s: %s failed with %s: %s; it will be handled here again (%d time(s) so far)",
                self.pc.group, what, type(exc).__qualname__, exc, self.unforeseen_failures.count,
                exc_info=exc if level == logging.ERROR else None)

    async def _send_back_or_resend(self, m: ConsumedMessage, delay_level: int) -> bool:
        max_times = self.pc.settings.reconsume_limit()
        try:
            await send_back(self.pc.consumer, m, delay_level=delay_level, max_reconsume_times=max_times)
            return True
        except (RocketStoreError, OSError) as exc:
            log.warning("send-back of %s failed (%s); sending a copy to the retry topic", m.msg_id, exc)
        try:
            await resend_to_retry_topic(self.pc.consumer, m, reconsume_times=m.reconsume_times + 1,
                                        max_reconsume_times=max_times)
            return True
        except (RocketStoreError, OSError) as exc:
            log.warning("cannot give %s back (%s); it will be handled here again", m.msg_id, exc)
            return False

    # --- orderly -----------------------------------------------------------------------------------------

    async def _orderly_loop(self, pq: ProcessQueue) -> None:
        pc, s = self.pc, self.pc.settings
        while not pq.dropped and not pc.stopping:
            if not pq.messages:
                await pq.wait_arrived(1.0)
                continue
            if pc.clustering and (not pq.locked or pq.lock_expired(s.lock_max_live_s)):
                if not await pc.lock_one(pq):
                    await asyncio.sleep(RELOCK_WAIT_S)
                continue
            suspend = False
            # a consume slot, as 4.9.3 runs each queue's ConsumeRequest on the consumeThreadMax threads: an
            # async handler too is called for at most consume_concurrency queues at once
            async with self._semaphore, pq.consume_lock:
                if pq.dropped or pc.stopping:
                    return
                if pc.clustering and (not pq.locked or pq.lock_expired(s.lock_max_live_s)):
                    continue  # lost while it waited for the slot: locked again first
                messages = pq.take(s.consume_batch_size)
                context = OrderlyContext(pq.mq)
                with handler_context(context):
                    status = await self.call_handler(messages, pq.mq.topic)
                if status is ConsumeStatus.ROLLBACK:  # everything consumed since the last commit, again
                    pq.rollback()
                    suspend = True
                    again = []
                elif status is ConsumeStatus.RECONSUME_LATER:
                    again = await self._check_reconsume_times(messages)
                else:
                    again = []
                if again:
                    pq.put_back(again)
                    suspend = True
                elif not suspend and (context.auto_commit or status is ConsumeStatus.COMMIT):
                    # auto_commit off: consumed, but the offset stays before them until a COMMIT
                    offset = pq.commit()
                    if offset >= 0 and not pq.dropped:
                        pc.offsets.update(pq.mq, offset, increase_only=False)
            if suspend:
                pause = context.suspend_current_queue_s
                if pause is None:
                    pause = s.suspend_current_queue_s
                await asyncio.sleep(min(max(pause, SUSPEND_MIN_S), SUSPEND_MAX_S))

    async def _check_reconsume_times(self, messages: Iterable[ConsumedMessage]) -> list[ConsumedMessage]:
        """The messages to handle again (count raised); those past the limit go to the DLQ instead."""
        max_times = self.pc.settings.reconsume_limit()
        again = []
        for m in messages:
            if m.reconsume_times >= max_times:
                try:
                    await resend_to_retry_topic(self.pc.consumer, m, reconsume_times=m.reconsume_times,
                                                max_reconsume_times=max_times)
                    continue
                except (RocketStoreError, OSError) as exc:
                    log.warning("cannot send %s to the DLQ (%s); handling it again", m.msg_id, exc)
                except Exception as exc:  # ending the queue's task would stop the queue for good
                    self._unforeseen(exc, f"sending {m.msg_id} to the DLQ")
            again.append(m.with_reconsume_times(m.reconsume_times + 1))
        return again
