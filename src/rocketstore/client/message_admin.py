"""AdminClient's reads of message queues (mqadmin queryMsgByOffset, printMsgByQueue, printMsg): the message at
a queue offset, a queue's messages between two offsets or two store times, with their tags counted, and every
readable queue's of a topic between two store times.

All pull as mqadmin does, with a pull consumer of the TOOLS_CONSUMER group (PULL_MESSAGE without committing
anything; GET_MIN_OFFSET / GET_MAX_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP for the bounds), from the queue's
master, else a slave.  Mixed into AdminClient.  Loop-bound.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from rocketstore.client.admin_types import AdminCalls
from rocketstore.client.consumer import PullConsumer, PullStatus
from rocketstore.client.credentials import SessionCredentials
from rocketstore.client.errors import ClientError
from rocketstore.client.route import MessageQueue, RouteCache
from rocketstore.message.record import StoredMessage

__all__ = ["TOOLS_CONSUMER_GROUP", "MessageAdmin", "QueueMessages"]

#: the group RocketMQ's admin tools pull as (MixAll.TOOLS_CONSUMER_GROUP); brokers treat it as a system group
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: messages asked for per pull while reading a range, as printMsgByQueue does
PULL_BATCH = 32


@dataclass(frozen=True, slots=True)
class QueueMessages:
    """A queue's messages from *begin_offset* up to (not including) *end_offset*, at most the count asked:
    *next_offset* is where reading stopped (``< end_offset`` when cut short); *tag_counts* counts the
    messages read by tag (untagged ones left out, as mqadmin does)."""

    queue: MessageQueue
    begin_offset: int
    end_offset: int
    next_offset: int
    messages: list[StoredMessage]
    tag_counts: dict[str, int]


class MessageAdmin(AdminCalls):
    def _tools_consumer(self) -> PullConsumer:
        credentials = self.pool.credentials
        return PullConsumer(";".join(self.namesrv_addrs), TOOLS_CONSUMER_GROUP, timeout_s=self.timeout_s,
                            credentials=credentials if isinstance(credentials, SessionCredentials) else None,
                            tls=self.pool.tls)

    async def message_queue(self, topic: str, broker: str, queue_id: int) -> MessageQueue:
        """The queue *queue_id* of *topic* on *broker* (a broker name, or the address of its master), checked
        against the topic's route: NoRouteError for an unknown topic, ClientError for a broker or queue id
        it does not have."""
        route = await self.route(topic)
        names = {qd.broker_name: qd for qd in route.queue_datas}
        if broker not in names:
            by_addr = {bd.master_addr(): bd.broker_name for bd in route.broker_datas}
            if broker not in by_addr:
                raise ClientError(f"topic {topic!r} has no queues on broker {broker!r} (it has: "
                                  f"{', '.join(sorted(names)) or 'none'})")
            broker = by_addr[broker]
        qd = names[broker]
        count = max(qd.read_queue_nums, qd.write_queue_nums)
        if not 0 <= queue_id < count:
            raise ClientError(f"topic {topic!r} has queues 0..{count - 1} on {broker}, not {queue_id}")
        return MessageQueue(topic, broker, queue_id)

    async def message_by_offset(self, topic: str, broker: str, queue_id: int, queue_offset: int) -> StoredMessage:
        """mqadmin queryMsgByOffset: the message at *queue_offset* of one queue; ClientError when there is
        none (the offset is past the end or before the first message kept)."""
        mq = await self.message_queue(topic, broker, queue_id)
        async with self._tools_consumer() as consumer:
            result = await consumer.pull(mq, queue_offset, 1)
        if result.undecodable:  # a message there, shown as it is not: say what is wrong with it
            raise result.undecodable[0].error()
        if result.status != PullStatus.FOUND or not result.messages:
            held = (f"it holds offsets {result.min_offset} .. {result.max_offset - 1}"
                    if result.min_offset < result.max_offset else
                    f"it holds no message; the next one stored gets offset {result.max_offset}")
            raise ClientError(f"no message at offset {queue_offset} of {topic} queue {queue_id} on "
                              f"{mq.broker_name} ({result.status}; {held})")
        return result.messages[0]

    async def queue_messages(self, topic: str, broker: str, queue_id: int, *, begin_offset: int | None = None,
                             end_offset: int | None = None, begin_ms: int | None = None, end_ms: int | None = None,
                             expression: str = "*", max_count: int | None = None) -> QueueMessages:
        """mqadmin printMsgByQueue: the messages of one queue from the first kept (or *begin_offset*, or the
        one stored nearest *begin_ms*) up to the end (or *end_offset* excluded, or the last stored at or before
        *end_ms*), those matching the tag *expression*, at most *max_count*.  The times are looked up with
        SEARCH_OFFSET_BY_TIMESTAMP, which answers the nearest message (4.9.3's getOffsetInQueueByTime): it
        may be stored before the time, and a time past the last message answers that last message, which
        *end_ms* then keeps (as mqadmin prints it)."""
        mq = await self.message_queue(topic, broker, queue_id)
        async with self._tools_consumer() as consumer:
            return await _read_queue(consumer, mq, begin_offset=begin_offset, end_offset=end_offset,
                                     begin_ms=begin_ms, end_ms=end_ms, expression=expression, max_count=max_count)

    async def topic_messages(self, topic: str, *, begin_ms: int | None = None, end_ms: int | None = None,
                             expression: str = "*", max_count: int | None = None) -> list[QueueMessages]:
        """mqadmin printMsg (and consumeMessage without -b): every readable queue of *topic*, in broker name
        then queue id order, read as :meth:`queue_messages` reads one from the message stored nearest
        *begin_ms* up to the last stored at or before *end_ms*; *max_count* bounds the messages of all queues
        together (queues after it is reached come back empty).  NoRouteError for an unknown topic."""
        route = await self.route(topic)
        found: list[QueueMessages] = []
        async with self._tools_consumer() as consumer:
            for mq in RouteCache.subscribe_queues(topic, route):
                left = None if max_count is None else max_count - sum(len(q.messages) for q in found)
                found.append(await _read_queue(consumer, mq, begin_ms=begin_ms, end_ms=end_ms,
                                               expression=expression, max_count=left))
        return found


async def _end_by_time(consumer: PullConsumer, mq: MessageQueue, end_ms: int) -> int:
    """The queue offset just past the messages stored at or before *end_ms*.  The broker's search answers the
    message stored nearest *end_ms*, which may be stored at or before it (the last message, for a time past
    it): read on from there while the messages are stored no later (mqadmin's pulls of 32 from below that
    offset print it too)."""
    end = await consumer.search_offset(mq, end_ms)
    while True:
        result = await consumer.pull(mq, end, PULL_BATCH)
        if result.status != PullStatus.FOUND or result.next_begin_offset <= end:
            return end
        later = [m.queue_offset for m in result.messages if m.store_timestamp > end_ms]
        if later:
            return max(end, min(later))
        end = result.next_begin_offset


async def _read_queue(consumer: PullConsumer, mq: MessageQueue, *, begin_offset: int | None = None,
                      end_offset: int | None = None, begin_ms: int | None = None, end_ms: int | None = None,
                      expression: str = "*", max_count: int | None = None) -> QueueMessages:
    """One queue's messages as :meth:`MessageAdmin.queue_messages` describes, read with *consumer*; a
    *max_count* of 0 reads nothing (the bounds are still looked up)."""
    begin = begin_offset if begin_offset is not None else await consumer.min_offset(mq)
    if begin_offset is None and begin_ms is not None:
        begin = await consumer.search_offset(mq, begin_ms)
    end = end_offset if end_offset is not None else await consumer.max_offset(mq)
    if end_offset is None and end_ms is not None:
        end = await _end_by_time(consumer, mq, end_ms)
    if begin_offset is not None:
        # an offset retention already deleted answers OFFSET_ILLEGAL, which would end the walk before
        # the messages of the range still kept: start at the first one kept
        first_kept = await consumer.min_offset(mq)
        if begin < first_kept < end:
            begin = first_kept
    messages: list[StoredMessage] = []
    offset = begin
    while offset < end and (max_count is None or len(messages) < max_count):
        result = await consumer.pull(mq, offset, min(PULL_BATCH, end - offset), expression=expression)
        if result.undecodable:  # a listing that left it out would be silently wrong
            raise result.undecodable[0].error()
        # NO_MATCHED_MSG: a batch where no tag matched; go on past it (mqadmin stops there)
        if result.status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG) \
                or result.next_begin_offset <= offset:
            break
        messages.extend(m for m in result.messages if m.queue_offset < end)
        offset = result.next_begin_offset
    if max_count is not None and len(messages) > max_count:
        offset = messages[max_count].queue_offset
        messages = messages[:max_count]
    tags = Counter(m.tags for m in messages if m.tags and m.tags.strip())
    return QueueMessages(mq, begin, end, min(offset, end), messages,
                         dict(sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))))
