"""Delayed delivery (RocketMQ's ScheduleMessageService): moves due messages out of SCHEDULE_TOPIC_XXXX.

The store files a message with ``DELAY=n`` under SCHEDULE_TOPIC_XXXX queue n-1 with REAL_TOPIC / REAL_QID
properties.  For each level this service reads that queue from its delivery offset; a message is due at
``store time + delay of its level`` (what the consume queue's tagsCode holds).  A due message is written
again to its real topic and queue with the same body, flag, sysFlag, born time/host, store host and
reconsume count, without DELAY (RocketMQ keeps DELAY in the stored properties string but clears it from
the map; the store here only takes a map, so DELAY is dropped, REAL_TOPIC / REAL_QID stay as in RocketMQ).

Delivery offsets persist in ``config/delayOffset.json`` (``{"offsetTable":{level:offset}}``) every 10 s
and at shutdown.  Runs on masters only.  Loop-bound.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable

from rocketstore.broker.config_files import read_json_file, write_json_atomically
from rocketstore.errors import MessageDecodeError
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, decode_record
from rocketstore.store.message_store import MessageStore
from rocketstore.store.results import GetMessageStatus, PutMessageStatus, PutResult

__all__ = ["SCHEDULE_TOPIC", "ScheduleService"]

log = logging.getLogger(__name__)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
#: RocketMQ's DELAY_FOR_A_WHILE
POLL_INTERVAL_S = 0.1
#: RocketMQ's DELAY_FOR_A_PERIOD, after a failed delivery
RETRY_AFTER_FAILURE_S = 10.0
FLUSH_INTERVAL_S = 10.0


class ScheduleService:
    def __init__(self, store: MessageStore, config_dir: str, put: Callable[[Message], Awaitable[PutResult]],
                 clock_ms: Callable[[], int]) -> None:
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

    def load(self) -> None:
        obj = read_json_file(self.path)
        table = obj.get("offsetTable") if isinstance(obj, dict) else None
        if isinstance(table, dict):
            for level, offset in table.items():
                try:
                    self.offsets[int(level)] = int(offset)
                except (TypeError, ValueError):
                    continue

    def persist(self, force: bool = False) -> None:
        with self._lock:
            if not self._dirty and not force:
                return
            snapshot = dict(sorted(self.offsets.items()))
            self._dirty = False
        write_json_atomically(self.path, {"offsetTable": snapshot})

    def offset_table_json(self) -> dict[int, int]:
        return dict(sorted(self.offsets.items()))

    def start(self) -> None:
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
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_S)
            try:
                self.persist()
            except OSError:
                log.exception("cannot persist delay offsets")

    async def _deliver_loop(self) -> None:
        loop = asyncio.get_running_loop()
        retry_at: dict[int, float] = {}
        while True:
            for level in self.levels:
                if retry_at.get(level, 0.0) > loop.time():
                    continue
                try:
                    ok = await self.deliver_due(level)
                except Exception:
                    log.exception("delayed delivery of level %s failed", level)
                    ok = False
                if not ok:
                    retry_at[level] = loop.time() + RETRY_AFTER_FAILURE_S
            await asyncio.sleep(POLL_INTERVAL_S)

    async def deliver_due(self, level: int) -> bool:
        """Deliver every due message of *level*; False if a delivery failed (it is retried later)."""
        queue_id = level - 1
        delay_ms = self.levels[level]
        offset = self.offsets.get(level, 0)
        while True:
            result = self.store.get(SCHEDULE_TOPIC, queue_id, offset, 32)
            if result.status is not GetMessageStatus.FOUND:
                if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                     GetMessageStatus.OFFSET_FOUND_NULL):
                    self._advance(level, result.next_begin_offset)
                    offset = result.next_begin_offset
                    if result.status is GetMessageStatus.OFFSET_FOUND_NULL:
                        continue
                return True
            now = self._clock_ms()
            for record, queue_offset in zip(result.records, result.queue_offsets):
                try:
                    stored = decode_record(record)
                except MessageDecodeError as exc:
                    log.error("skipping an undecodable delayed record at %s/%s: %s", level, queue_offset, exc)
                    self._advance(level, queue_offset + 1)
                    continue
                if stored.store_timestamp + delay_ms > now:
                    return True
                props = stored.properties
                real_topic = props.get(PropertyName.REAL_TOPIC)
                real_qid = props.get(PropertyName.REAL_QID)
                if not real_topic or real_qid is None or not real_qid.lstrip("-").isdigit():
                    log.error("delayed message at %s/%s has no REAL_TOPIC/REAL_QID; dropped", level, queue_offset)
                    self._advance(level, queue_offset + 1)
                    continue
                props.pop(PropertyName.DELAY, None)
                message = Message(real_topic, stored.body, props, int(real_qid), stored.flag, stored.sys_flag,
                                  stored.born_timestamp, stored.born_host, stored.store_host, stored.reconsume_times)
                put = await self._put(message)
                if put.status is not PutMessageStatus.PUT_OK:
                    log.warning("delayed delivery to %s failed: %s", real_topic, put.status.name)
                    return False
                self.delivered_count += 1
                self._advance(level, queue_offset + 1)
            offset = result.next_begin_offset
            self._advance(level, offset)

    def _advance(self, level: int, offset: int) -> None:
        with self._lock:
            if self.offsets.get(level, 0) < offset:
                self.offsets[level] = offset
                self._dirty = True
