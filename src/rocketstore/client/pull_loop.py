"""The pull loop of one assigned queue (DefaultMQPushConsumerImpl.pullMessage and its PullCallback).

Long-polled pulls (the broker holds an empty pull up to ``long_poll_ms``) feed the queue's
:class:`ProcessQueue`; pulling pauses while it holds too many messages, too many bytes or (concurrently)
too wide an offset span, so a slow handler bounds the memory used.  Orderly CLUSTERING pulls only while
the broker lock is held.  The pull carries the committed-offset flag, so the broker learns the group's
progress with each pull too; not an owner whose ``commit_offset_with_pull`` is False (the lite pull
consumer, as 4.9.3's, whose offsets reach the broker through its offset store only).

The loop is shared by the push consumer and the lite pull consumer (:class:`PullOwner`): what is done
with pulled messages is the owner's ``consumption.dispatch``, whether pulling waits is its
``pull_held_back``, and what an empty pull or an illegal offset does to the offsets is its
``caught_up`` / ``offset_moved``.

A pulled message that cannot be handed over as sent (``PullResult.undecodable``: its compressed body does
not inflate, its body fails its CRC, or its record does not decode) is skipped: the messages after it are
handed over, the offset moves past it, and it is logged at ERROR naming topic, queue
id, queue offset and msgId (of a run of them in a row, the first and every 1000th: a queue of thousands of
bad messages logs a few lines, not thousands).  4.9.3 drops it and the rest of its pull without a word.

Loop-bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Mapping
from typing import Protocol

from rocketstore.client.consume_stats import ConsumeStats
from rocketstore.client.consumer import MessageSelector, PullConsumer, PullStatus, UndecodableMessage
from rocketstore.client.offset_store import OffsetStore
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.client.route import MessageQueue
from rocketstore.errors import LoopBoundError, RocketStoreError
from rocketstore.remoting.bodies import SubscriptionData
from rocketstore.repeats import FailureRun

__all__ = ["PullOwner", "flow_control_reason", "flow_controlled", "pull_loop"]

log = logging.getLogger(__name__)

#: PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL: re-check this often while pulling is paused
FLOW_CONTROL_CHECK_S = 0.05
#: PULL_TIME_DELAY_MILLS_WHEN_SUSPEND-like wait while an orderly queue is not locked
NOT_LOCKED_WAIT_S = 3.0


class PullSettings(Protocol):
    @property
    def pull_batch_size(self) -> int: ...
    @property
    def long_poll_ms(self) -> int: ...
    @property
    def consumer_timeout_when_suspend_s(self) -> float: ...
    @property
    def pull_delay_on_error_s(self) -> float: ...
    @property
    def pull_threshold_for_queue(self) -> int: ...
    @property
    def pull_threshold_bytes_for_queue(self) -> int: ...
    @property
    def consume_max_span(self) -> int: ...


class Dispatcher(Protocol):
    def dispatch(self, pq: ProcessQueue, messages: list[ConsumedMessage]) -> None: ...


class PullOwner(Protocol):
    """What the pull loop needs of the consumer that runs it."""

    @property
    def settings(self) -> PullSettings: ...
    group: str
    orderly: bool
    clustering: bool
    #: CLUSTERING pulls carry the committed offset (the push consumer's do; the lite pull consumer's not)
    commit_offset_with_pull: bool
    #: a pull that times out closes its connection (the lite pull consumer's, sync in 4.9.3); not the push
    #: consumer's (async there: the channel stays open, its heartbeats, sync, close a silent one)
    close_on_pull_timeout: bool
    stopping: bool
    consumer: PullConsumer
    offsets: OffsetStore
    stats: ConsumeStats
    subscriptions: dict[str, SubscriptionData]
    @property
    def consumption(self) -> Dispatcher: ...

    def pull_held_back(self, pq: ProcessQueue) -> bool:
        """Pulling *pq* waits now (flow control, a pause)."""
        ...

    def caught_up(self, mq: MessageQueue, offset: int) -> None:
        """Nothing of *mq* is held and the pull found nothing more to hand over before *offset*."""
        ...

    async def offset_moved(self, mq: MessageQueue, offset: int) -> None:
        """The broker said the pull offset was illegal and the queue goes on at *offset*."""
        ...

    async def compute_pull_from_where(self, mq: MessageQueue) -> int: ...

    async def quietly(self, what: str, coro: Awaitable[None]) -> None: ...


def flow_control_reason(settings: PullSettings, pq: ProcessQueue, *, check_span: bool) -> str | None:
    """Why *pq* may not pull more now: ``"count"`` (too many messages held), ``"size"`` (too many bytes) or,
    with *check_span*, ``"span"`` (held offsets too far apart); None when it may (pullMessage's order)."""
    if pq.count > settings.pull_threshold_for_queue:
        return "count"
    if pq.body_bytes > settings.pull_threshold_bytes_for_queue:
        return "size"
    if check_span and pq.max_span > settings.consume_max_span:
        return "span"
    return None


def flow_controlled(settings: PullSettings, pq: ProcessQueue, *, check_span: bool) -> bool:
    """*pq* holds too many messages or bytes, or (*check_span*) spans too many offsets to pull more."""
    return flow_control_reason(settings, pq, check_span=check_span) is not None


def _selector(subscriptions: Mapping[str, SubscriptionData], topic: str) -> MessageSelector:
    """The subscription's selector; everything for a topic without one (an assigned queue)."""
    sub = subscriptions.get(topic)
    return MessageSelector(sub.expression_type, sub.sub_string) if sub is not None else MessageSelector.by_tag("*")


def _stop_on_wrong_loop(mq: MessageQueue, exc: LoopBoundError) -> None:
    log.error("pulling %s stops: %s", mq, exc)


def _skip_undecodable(pq: ProcessQueue, undecodable: tuple[UndecodableMessage, ...],
                      skips: FailureRun) -> None:
    """Log the skipped messages (*skips*: the run of them in a row) and let the committed offset pass them."""
    for bad in undecodable:
        log.log(skips.failed(logging.ERROR), "skipping %s (%d undecodable in a row)", bad.describe(),
                skips.count)
    pq.passed(undecodable[-1].queue_offset)


async def pull_loop(pc: PullOwner, pq: ProcessQueue, offset: int) -> None:
    """Pull *pq*'s queue from *offset* until the queue is dropped or the consumer stops.  A failed pull is
    tried again after ``pull_delay_on_error_s``, except LoopBoundError (the loop runs on another event loop
    than the consumer's connections: every try would fail the same way), which ends it at once, logged.
    Of a run of failed pulls (a broker down: one every ``pull_delay_on_error_s`` for as long as it is) the
    first and every 1000th are warnings, the others debug lines; the first pull that works again says so."""
    s = pc.settings
    mq = pq.mq
    failures = FailureRun()  # failed pulls in a row
    skips = FailureRun()  # undecodable messages skipped in a row
    while not pq.dropped and not pc.stopping:
        # read at every pull, as 4.9.3's lite pull task does: a subscription replaced meanwhile applies now
        expression = _selector(pc.subscriptions, mq.topic)
        pq.last_pull_s = time.monotonic()  # every turn, as Java's pullMessage stamps it before flow control
        if pc.pull_held_back(pq):
            await pq.wait_freed(FLOW_CONTROL_CHECK_S)
            continue
        if pc.orderly and pc.clustering:
            if not pq.locked:
                await pq.wait_freed(NOT_LOCKED_WAIT_S)  # lock_all wakes it when the lock comes back
                continue
            if not pq.previously_locked:  # first time locked: another member may have moved the offset
                try:
                    offset = await pc.compute_pull_from_where(mq)
                except LoopBoundError as exc:
                    _stop_on_wrong_loop(mq, exc)
                    return
                except (RocketStoreError, OSError) as exc:
                    log.warning("cannot recompute the offset of %s: %s", mq, exc)
                    await asyncio.sleep(s.pull_delay_on_error_s)
                    continue
                pq.previously_locked = True
        committed = pc.offsets.read_memory(mq) if pc.clustering and pc.commit_offset_with_pull else -1
        began = time.monotonic()
        try:
            result = await pc.consumer.pull(mq, offset, s.pull_batch_size, expression=expression,
                                            suspend_ms=s.long_poll_ms,
                                            timeout_s=s.consumer_timeout_when_suspend_s,
                                            commit_offset=committed if committed > 0 else None,
                                            close_if_timeout=pc.close_on_pull_timeout)
        except LoopBoundError as exc:
            _stop_on_wrong_loop(mq, exc)
            return
        except (RocketStoreError, OSError) as exc:
            log.log(failures.failed(), "pull of %s at %d failed: %s (%d in a row; trying again every %s s)",
                    mq, offset, exc, failures.count, s.pull_delay_on_error_s)
            await asyncio.sleep(s.pull_delay_on_error_s)
            continue
        if failures.count:
            log.info("pull of %s goes on after %d failed pull(s)", mq, failures.ended())
        pq.last_pull_s = time.monotonic()
        if pq.dropped:
            return
        if _selector(pc.subscriptions, mq.topic) != expression:
            # subscribe() replaced the expression while the pull was held at the broker: its answer is filtered
            # by the old one (a message of an old tag delivered, one of a new tag skipped past): pull the
            # same offset again with the new expression
            continue
        if result.status == PullStatus.FOUND:
            pc.stats.pulled(mq.topic, (pq.last_pull_s - began) * 1000, len(result.messages))
            offset = result.next_begin_offset
            bounds = (str(result.min_offset), str(result.max_offset))
            messages = [ConsumedMessage.from_stored(m, mq.broker_name, pc.group, bounds)
                        for m in result.messages]
            added = pq.put(messages)
            if result.undecodable:  # (after the put: the messages before them go in at the top of pq)
                _skip_undecodable(pq, result.undecodable, skips)
            elif skips.count and result.messages:
                log.info("%s delivers messages again after %d undecodable one(s) skipped", mq, skips.ended())
            if added:
                pc.consumption.dispatch(pq, added)
            elif pq.count == 0:  # everything filtered out by tag: nothing held, so the offset may move on
                pc.caught_up(mq, offset)
            interval = getattr(s, "pull_interval_s", 0.0)  # the push consumer's pullInterval
            if interval > 0 and result.messages:  # (a drop or shutdown cancels the task, and so the pause)
                await asyncio.sleep(interval)
        elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            offset = result.next_begin_offset
            if pq.count == 0:  # correctTagsOffset
                pc.caught_up(mq, offset)
        else:  # OFFSET_ILLEGAL: the broker says where the queue really starts (or ends)
            log.warning("offset %d of %s is illegal; moving to %d", offset, mq, result.next_begin_offset)
            offset = result.next_begin_offset
            await pc.offset_moved(mq, offset)
