"""The pull loop of one assigned queue (DefaultMQPushConsumerImpl.pullMessage and its PullCallback).

Long-polled pulls (the broker holds an empty pull up to ``long_poll_ms``) feed the queue's
:class:`ProcessQueue`; pulling pauses while it holds too many messages, too many bytes or (concurrently)
too wide an offset span, so a slow handler bounds the memory used.  Orderly CLUSTERING pulls only while
the broker lock is held.  The pull carries the committed-offset flag, so the broker learns the group's
progress with each pull too.

Loop-bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketstore.client.consumer import MessageSelector, PullStatus
from rocketstore.client.process_queue import ProcessQueue
from rocketstore.client.push_types import ConsumedMessage
from rocketstore.errors import RocketStoreError

if TYPE_CHECKING:
    from rocketstore.client.push_consumer import PushConsumer

__all__ = ["pull_loop"]

log = logging.getLogger(__name__)

#: PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL: re-check this often while pulling is paused
FLOW_CONTROL_CHECK_S = 0.05
#: PULL_TIME_DELAY_MILLS_WHEN_SUSPEND-like wait while an orderly queue is not locked
NOT_LOCKED_WAIT_S = 3.0


def _flow_controlled(pc: PushConsumer, pq: ProcessQueue) -> bool:
    s = pc.settings
    if pq.count > s.pull_threshold_for_queue or pq.body_bytes > s.pull_threshold_bytes_for_queue:
        return True
    return not pc.orderly and pq.max_span > s.consume_max_span


async def pull_loop(pc: PushConsumer, pq: ProcessQueue, offset: int) -> None:
    """Pull *pq*'s queue from *offset* until the queue is dropped or the consumer stops."""
    s = pc.settings
    mq = pq.mq
    sub = pc.subscriptions[mq.topic]
    expression = MessageSelector(sub.expression_type, sub.sub_string)
    while not pq.dropped and not pc.stopping:
        pq.last_pull_s = time.monotonic()  # every turn, as Java's pullMessage stamps it before flow control
        if _flow_controlled(pc, pq):
            await pq.wait_freed(FLOW_CONTROL_CHECK_S)
            continue
        if pc.orderly and pc.clustering:
            if not pq.locked:
                await pq.wait_freed(NOT_LOCKED_WAIT_S)  # lock_all wakes it when the lock comes back
                continue
            if not pq.previously_locked:  # first time locked: another member may have moved the offset
                try:
                    offset = await pc.compute_pull_from_where(mq)
                except (RocketStoreError, OSError) as exc:
                    log.warning("cannot recompute the offset of %s: %s", mq, exc)
                    await asyncio.sleep(s.pull_delay_on_error_s)
                    continue
                pq.previously_locked = True
        committed = pc.offsets.read_memory(mq) if pc.clustering else -1
        began = time.monotonic()
        try:
            result = await pc.consumer.pull(mq, offset, s.pull_batch_size, expression=expression,
                                            suspend_ms=s.long_poll_ms,
                                            commit_offset=committed if committed > 0 else None)
        except (RocketStoreError, OSError) as exc:
            log.warning("pull of %s at %d failed: %s", mq, offset, exc)
            await asyncio.sleep(s.pull_delay_on_error_s)
            continue
        pq.last_pull_s = time.monotonic()
        if pq.dropped:
            return
        if result.status == PullStatus.FOUND:
            pc.stats.pulled(mq.topic, (pq.last_pull_s - began) * 1000, len(result.messages))
            offset = result.next_begin_offset
            messages = [ConsumedMessage.from_stored(m, mq.broker_name, pc.group) for m in result.messages]
            added = pq.put(messages)
            if added:
                pc.consumption.dispatch(pq, added)
            elif pq.count == 0:  # everything filtered out by tag: nothing held, so the offset may move on
                pc.offsets.update(mq, offset, increase_only=True)
        elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            offset = result.next_begin_offset
            if pq.count == 0:  # correctTagsOffset
                pc.offsets.update(mq, offset, increase_only=True)
        else:  # OFFSET_ILLEGAL: the broker says where the queue really starts (or ends)
            log.warning("offset %d of %s is illegal; moving to %d", offset, mq, result.next_begin_offset)
            offset = result.next_begin_offset
            pc.offsets.update(mq, offset, increase_only=False)
            await pc.quietly(f"commit offset of {mq}", pc.offsets.persist([mq]))
