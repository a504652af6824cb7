"""Delayed delivery (RocketMQ's ScheduleMessageService): moves due messages out of SCHEDULE_TOPIC_XXXX.

The store files a message with ``DELAY=n`` under SCHEDULE_TOPIC_XXXX queue n-1 with REAL_TOPIC / REAL_QID
properties; its consume-queue tagsCode is the delivery time, ``store time + delay of its level``.  For each
level this service reads that queue from its delivery offset and writes every due message again to its
real topic and queue with the same body, flag, sysFlag, born time/host, store host, reconsume count and
the same properties string: DELAY stays in it, as in the records RocketMQ 4.9.3 writes (its messageTimeup
builds the properties string first and then clears DELAY from the property map only, so the delivered
record is not delayed again).  Here the put is asked not to apply the delay instead.

Due is decided, as in RocketMQ, from the record's consume-queue tagsCode: the delivery time the dispatcher
wrote with the delay levels configured then, so a messageDelayLevel changed between the put and a restart
keeps the delay the message was stored with (store time plus the level's current delay only where no entry
is found).  A delivery time further ahead than one whole current delay (the clock went back, or the level
got shorter) counts as due now, as correctDeliverTimestamp does.

A record that cannot be stored anywhere is dropped with an error, never retried: a REAL_QID that
Integer.parseInt refuses, a put answering MESSAGE_ILLEGAL (e.g. a REAL_TOPIC that is no topic name).
4.9.3 instead retries such a record every 100 ms for ever (its NumberFormatException or failed put
re-reads the same consume-queue entry), which stops every later message of that level too.  A negative
REAL_QID, which 4.9.3's store files under a queue of that number and ours refuses, is dropped as well.
A REAL_TOPIC of SCHEDULE_TOPIC_XXXX itself (only an embedded put can leave one) is dropped too: 4.9.3
delivers it into a schedule queue again, where it waits and comes back every delay for ever.

Delivery offsets persist in ``config/delayOffset.json`` every ``flushDelayOffsetInterval`` (10 s) and at
shutdown, in the exact text RocketMQ writes (fastjson's pretty format of DelayOffsetSerializeWrapper: integer
keys unquoted, a tab indent, e.g. ``{\\n\\t"offsetTable":{1:1,2:1\\n\\t}\\n}``); only levels that
delivered something have an entry (a master with none writes the file at its first flush, its table empty, as
4.9.3 does).
On load the offsets of the levels configured are clamped into their queue's [min, max], as
correctDelayOffset does (the offset of a level no longer configured stays as it was read); one found past
its queue's end later (its queue did not exist at load, or is gone) goes on from the end, as 4.9.3's timer
task does.

A record damaged on disk since it was stored (its body fails its CRC: bit rot in a record recovery keeps,
or one that does not decode) is not delivered: it stays in the schedule queue, logged as an ERROR naming
it, and the level goes on with the records after it.  A delivery would store its changed body under a fresh
CRC, a copy every consumer takes as intact, as 4.9.3's does (its lookMessageByOffset does not check the CRC;
one that does not decode it passes over without a word).

A failed delivery put is tried again after DELAY_FOR_A_WHILE (100 ms), as 4.9.3's syncDeliver does (its
DELAY_FOR_A_PERIOD, 10 s, only follows an exception escaping the timer task): e.g. a broker made SLAVE by
UPDATE_BROKER_CONFIG keeps delivering, as 4.9.3's does, and its store refuses every put until it is a master
again.

Delivers on masters only; a slave loads the offsets (GET_ALL_DELAY_OFFSET and the runtime info show them, as
4.9.3's slave shows the table it loaded) but neither starts nor writes them.  Loop-bound: every method but
:meth:`persist` runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable

from rocketstore.broker.config_files import FailureLog, read_json_file, write_text_atomically
from rocketstore.config_json import offset_table_of
from rocketstore.errors import MessageDecodeError
from rocketstore.message.java_numbers import parse_java_int
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, StoredMessage, decode_record
from rocketstore.store.dispatch import SCHEDULE_TOPIC
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, PutMessageStatus, PutResult

__all__ = ["SCHEDULE_TOPIC", "ScheduleService", "encode_delay_offsets"]

log = logging.getLogger(__name__)

#: transactional half messages never come out of the schedule topic (RocketMQ logs "[BUG]" and drops them)
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
#: RocketMQ's DELAY_FOR_A_WHILE
POLL_INTERVAL_S = 0.1
#: RocketMQ's DELAY_FOR_A_PERIOD, after an unexpected error (a failed put: POLL_INTERVAL_S)
RETRY_AFTER_ERROR_S = 10.0


def encode_delay_offsets(offsets: dict[int, int], *, pretty: bool = True) -> str:
    """delayOffset.json's text as RocketMQ 4.9.3 writes it (``JSON.toJSONString(wrapper, true)``), or with
    ``pretty=False`` the compact form its GET_ALL_DELAY_OFFSET answer carries (``{"offsetTable":{1:1,2:1}}``).

    fastjson's pretty printer puts a new line before each bean field and before a non-empty map's closing
    brace, but none between the entries of a map with non-string keys; the ConcurrentHashMap iterates
    small integer keys in ascending order.
    """
    entries = ",".join(f"{level}:{offset}" for level, offset in sorted(offsets.items()))
    if not pretty:
        return '{"offsetTable":{' + entries + "}}"
    return '{\n\t"offsetTable":{' + entries + ("\n\t" if offsets else "") + "}\n}"


class ScheduleService:
    def __init__(self, store: MessageStore, config_dir: str, put: Callable[[Message], Awaitable[PutResult]],
                 clock_ms: Callable[[], int]) -> None:
        """*put* stores a delivered message without applying its DELAY again; *clock_ms* is wall time in
        ms (injected so that tests can replay a recorded timeline)."""
        self.store = store
        self.path = os.path.join(config_dir, "delayOffset.json")
        self.levels = store.config.delay_levels_ms()
        self.offsets: dict[int, int] = {}
        self._put = put
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._dirty = False
        self._tasks: list[asyncio.Task[None]] = []
        self.delivered_count = 0
        #: delivering (started on a master); a slave's service only holds the offsets it loaded
        self.started = False
        #: per level, the status of the delivery put that has been failing since (logged once, not every try)
        self._failing: dict[int, PutMessageStatus] = {}

    def load(self) -> None:
        """Read delayOffset.json (or its .bak) and clamp each offset into its queue's range."""
        # an offsetTable that is no object reads the .bak, as 4.9.3's ConfigManager.load does
        table = read_json_file(self.path, offset_table_of)
        if table is not None:
            for level, offset in table.items():
                try:
                    self.offsets[int(level)] = int(offset)
                except (TypeError, ValueError, OverflowError):  # (OverflowError: an infinite float)
                    log.error("ignoring delay offset %r: %r in %s", level, offset, self.path)
        queues = set(self.store.topics().get(SCHEDULE_TOPIC, ()))
        for level, offset in list(self.offsets.items()):
            # as correctDelayOffset: the levels configured now only (another is kept as it was read)
            if level not in self.levels or level - 1 not in queues:
                continue
            low, high = self.store.min_offset(SCHEDULE_TOPIC, level - 1), self.store.max_offset(SCHEDULE_TOPIC, level - 1)
            corrected = min(max(offset, low), high)
            if corrected != offset:
                log.error("delay offset of level %d corrected from %d to %d (queue holds %d..%d)", level, offset,
                          corrected, low, high)
                self.offsets[level] = corrected
                self._dirty = True
        for queue_id in sorted(queues):
            # a level messageDelayLevel no longer has (fewer levels than when they were sent): its messages
            # wait until the level is back, as in 4.9.3, which says nothing of them
            level = queue_id + 1
            if level in self.levels:
                continue
            waiting = self.store.max_offset(SCHEDULE_TOPIC, queue_id) - max(
                self.offsets.get(level, 0), self.store.min_offset(SCHEDULE_TOPIC, queue_id))
            if waiting > 0:
                log.warning("%d delayed message(s) of delay level %d wait in %s queue %d, but messageDelayLevel "
                            "has %d levels: they are delivered only once it has that level again", waiting,
                            level, SCHEDULE_TOPIC, queue_id, len(self.levels))

    def persist(self, force: bool = False) -> None:
        with self._lock:
            if not self._dirty and not force:
                return
            snapshot = dict(self.offsets)
            self._dirty = False
        try:
            write_text_atomically(self.path, encode_delay_offsets(snapshot))
        except OSError:
            with self._lock:
                self._dirty = True  # the next interval tries again (4.9.3 persists on every tick)
            raise

    def offset_table_json(self) -> dict[int, int]:
        return dict(sorted(self.offsets.items()))

    def start(self) -> None:
        self.started = True
        if not os.path.exists(self.path):
            # 4.9.3 writes the file at every flush, delivered or not: a new store has one, its table empty
            # (``{"offsetTable":{}}``), from the first flush on
            self._dirty = True
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._deliver_loop()))
        self._tasks.append(loop.create_task(self._flush_loop()))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._tasks.clear()

    async def _flush_loop(self) -> None:
        interval_s = max(0.1, self.store.config.flush_delay_offset_interval_ms / 1000)
        failures = FailureLog(log, self.path)  # a full disk: one line, not a traceback every interval
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.persist()
            except OSError as exc:
                failures.failed(exc)
            else:
                failures.succeeded()

    async def _deliver_loop(self) -> None:
        loop = asyncio.get_running_loop()
        retry_at: dict[int, float] = {}
        while True:
            for level in self.levels:
                if retry_at.get(level, 0.0) > loop.time():
                    continue
                try:
                    await self.deliver_due(level)
                except Exception:
                    log.exception("delayed delivery of level %s failed", level)
                    retry_at[level] = loop.time() + RETRY_AFTER_ERROR_S
            await asyncio.sleep(POLL_INTERVAL_S)

    async def deliver_due(self, level: int) -> bool:
        """Deliver every due message of *level*; False if a delivery failed (it is retried later)."""
        queue_id = level - 1
        delay_ms = self.levels[level]
        offset = self.offsets.get(level, 0)
        while True:
            result = self.store.get(SCHEDULE_TOPIC, queue_id, offset, 32)
            if offset > result.max_offset and result.status is not GetMessageStatus.FOUND:
                # past the queue's end (its delayOffset.json came from elsewhere, or the queue is gone or
                # shorter): as 4.9.3's timer task, go on from the end, or the level would wait for the
                # queue to grow past the offset and skip what it got meanwhile
                log.error("delay offset of level %d is %d, past its queue's end %d: going on from there", level,
                          offset, result.max_offset)
                with self._lock:
                    self.offsets[level] = result.max_offset
                    self._dirty = True
                return True
            if result.status is not GetMessageStatus.FOUND:
                if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                     GetMessageStatus.OFFSET_FOUND_NULL):
                    self._advance(level, result.next_begin_offset)
                    offset = result.next_begin_offset
                    if result.status is GetMessageStatus.OFFSET_FOUND_NULL:
                        continue
                return True
            due_at = self._due_times(queue_id, result.queue_offsets)
            for record, queue_offset in zip(result.records, result.queue_offsets):
                try:
                    stored = decode_record(record, check_crc=True)
                except MessageDecodeError as exc:  # left where it is: see the module docstring
                    log.error("delayed message %s queue %d queue offset %d is damaged and not delivered: %s",
                              SCHEDULE_TOPIC, queue_id, queue_offset, exc.reason)
                    self._advance(level, queue_offset + 1)
                    continue
                now = self._clock_ms()
                deliver_at = due_at.get(queue_offset, stored.store_timestamp + delay_ms)
                if deliver_at > now + delay_ms:  # RocketMQ's correctDeliverTimestamp: the clock went back
                    deliver_at = now
                if deliver_at > now:
                    return True
                message = self._delivery(stored.properties, stored, level, queue_offset)
                if message is not None:
                    try:
                        put = await self._put(message)
                    except Exception:  # (as 4.9.3's syncDeliver takes a put that throws for a failed one)
                        log.exception("delayed delivery to %s failed", message.topic)
                        return False
                    if put.status is PutMessageStatus.MESSAGE_ILLEGAL:
                        # the same record is refused again on every try: never deliverable (see the docstring)
                        log.error("delayed message at %s/%s refused by %s/%s (MESSAGE_ILLEGAL %s); dropped", level,
                                  queue_offset, message.topic, message.queue_id, put.remark)
                    elif put.status is not PutMessageStatus.PUT_OK:
                        # tried again after POLL_INTERVAL_S, as 4.9.3 does: logged when it starts failing
                        if self._failing.get(level) is not put.status:
                            log.warning("delayed delivery of level %d to %s failed: %s (trying again every %d ms)",
                                        level, message.topic, put.status.name, POLL_INTERVAL_S * 1000)
                            self._failing[level] = put.status
                        return False
                    else:
                        self.delivered_count += 1
                        if self._failing.pop(level, None) is not None:
                            log.info("delayed delivery of level %d goes on", level)
                self._advance(level, queue_offset + 1)
            offset = result.next_begin_offset
            self._advance(level, offset)

    @staticmethod
    def _delivery(props: dict[str, str], stored: StoredMessage, level: int, queue_offset: int) -> Message | None:
        """The message to write to the real topic, or None for one that cannot be delivered (logged)."""
        real_topic = props.get(PropertyName.REAL_TOPIC)
        real_qid_text = props.get(PropertyName.REAL_QID)
        if not real_topic or real_qid_text is None:
            log.error("delayed message at %s/%s has no REAL_TOPIC/REAL_QID; dropped", level, queue_offset)
            return None
        try:
            real_qid = parse_java_int(real_qid_text)
        except ValueError:
            real_qid = -1
        if real_qid < 0:
            log.error("delayed message at %s/%s has REAL_QID %r, no queue id; dropped", level, queue_offset,
                      real_qid_text[:64])
            return None
        if real_topic == TRANS_HALF_TOPIC:
            log.error("delayed message at %s/%s names the half topic as its real topic; dropped", level,
                      queue_offset)
            return None
        if real_topic == SCHEDULE_TOPIC:
            # its copy, DELAY kept, would wait in a schedule queue again and come back every delay for ever
            # (as in 4.9.3, whose brokers refuse sends to the topic but whose store takes such a put)
            log.error("delayed message at %s/%s names the schedule topic as its real topic; dropped", level,
                      queue_offset)
            return None
        # properties unchanged, DELAY included: the record RocketMQ writes keeps it (see the module docstring)
        return Message(real_topic, stored.body, props, real_qid, stored.flag, stored.sys_flag,
                       stored.born_timestamp, stored.born_host, stored.store_host, stored.reconsume_times)

    def _due_times(self, queue_id: int, queue_offsets: tuple[int, ...]) -> dict[int, int]:
        """The tagsCode (delivery time) of each of *queue_offsets*' consume-queue entries that is found."""
        if not queue_offsets:
            return {}
        # a get's records lie in one consume-queue file, as queue_entries' do
        first = queue_offsets[0]
        entries = self.store.queue_entries(SCHEDULE_TOPIC, queue_id, first, queue_offsets[-1] - first + 1) or ()
        return {first + i: tags_code for i, (_, _, tags_code) in enumerate(entries)}

    def _advance(self, level: int, offset: int) -> None:
        with self._lock:
            if self.offsets.get(level, 0) < offset:
                self.offsets[level] = offset
                self._dirty = True
