"""The broker's statistics: 4.9.3's BrokerStatsManager stat items, the store-side figures (StoreStats) and the
message totals at the last two midnights (BrokerStats), with the sampler that keeps their windows.

Stat items (name -> key -> item), fed where 4.9.3 feeds them:

    TOPIC_PUT_NUMS / TOPIC_PUT_SIZE   key topic         a send stored (messages, bytes); once per send request;
                                                        also a delayed message delivered to its real topic
    BROKER_PUT_NUMS                   key cluster name  messages stored by sends and delayed deliveries (its
                                                        ``times`` stays 0, as 4.9.3 adds to the value only)

(the send counts themselves live in StoreStats' per-topic lists, bumped by Broker.count_put with the
store figures in one lookup; the three items take them over before each sampling and each read)
    SNDBCK_PUT_NUMS                   key topic@group   a message given back (CONSUMER_SEND_MSG_BACK) stored;
                                                        topic: the one it was consumed from
    GROUP_GET_NUMS / GROUP_GET_SIZE   key topic@group   a pull that found messages (messages, bytes);
                                                        a delayed message delivered to its real topic
                                                        counts under SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER,
                                                        as 4.9.3's enableScheduleMessageStats (default on);
                                                        the transaction check's reads of the half and op
                                                        topics count under CID_RMQ_SYS_TRANS
    BROKER_GET_NUMS                   key cluster name  messages handed out by pulls and read by the
                                                        transaction check (value only)
    GROUP_GET_LATENCY                 key queueId@topic@group (4.9.3's key with its enableDetailStat,
                                                        on by default): ms a successful pull took (one
                                                        per pull)

The other names 4.9.3 registers (GROUP_GET_FROM_DISK_*, BROKER_GET_FROM_DISK_*, COMMERCIAL_*) are known but
nothing feeds them, as in 4.9.3's own broker: asking for one of their keys gets the "not exist" answer, like
any key that was never counted.  Nor are the QUEUE_* names of enableDetailStat (4.9.3 feeds them for
SCHEDULE_TOPIC_XXXX only): asking for them gets the same answer.

An item keeps ``value`` and ``times`` and snapshots of both: every 10 s (the last 7: one minute), every
10 min (the last 7: one hour) and every hour (the last 25: one day); the first snapshot of each list is
preceded by a zero one dated one period earlier.  A window's sum is last - first value, its tps the sum per
second between the two snapshot times, its avgpt the sum per counted event (4.9.3's StatsItem).

Counting is a few dict and int operations on the event loop, no lock and no clock; the clock is read by
the sampler (:meth:`BrokerStats.run`: one tick a second), which also samples StoreStats (its 10 s / 60 s /
600 s rates), swaps its latency bands every minute and records the totals at each local midnight.
Loop-bound: counters and sampler run on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator

from rocketstore.broker.topics import SCHEDULE_TOPIC
from rocketstore.store.store_stats import StoreStats

__all__ = [
    "BROKER_GET_NUMS",
    "BROKER_PUT_NUMS",
    "GROUP_GET_LATENCY",
    "GROUP_GET_NUMS",
    "GROUP_GET_SIZE",
    "KNOWN_STATS_NAMES",
    "SNDBCK_PUT_NUMS",
    "TOPIC_PUT_NUMS",
    "TOPIC_PUT_SIZE",
    "BrokerStats",
    "Snapshot",
    "StatsItem",
    "StatsItemSet",
    "next_local_midnight_ms",
]

log = logging.getLogger(__name__)

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
#: the group a delayed delivery counts as a get of (4.9.3's MixAll.SCHEDULE_CONSUMER_GROUP)
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
#: every stats name 4.9.3's BrokerStatsManager registers (fed or not), but the QUEUE_* ones of enableDetailStat
KNOWN_STATS_NAMES = (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, GROUP_GET_LATENCY,
                     SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS, "GROUP_GET_FROM_DISK_NUMS",
                     "GROUP_GET_FROM_DISK_SIZE", "BROKER_GET_FROM_DISK_NUMS", "BROKER_GET_FROM_DISK_SIZE",
                     "COMMERCIAL_SEND_TIMES", "COMMERCIAL_RCV_TIMES", "COMMERCIAL_SEND_SIZE", "COMMERCIAL_RCV_SIZE",
                     "COMMERCIAL_RCV_EPOLLS", "COMMERCIAL_SNDBCK_TIMES", "COMMERCIAL_PERM_FAILURES")

#: (period ms, snapshots kept) of the minute, hour and day windows
_MINUTE = (10_000, 7)
_HOUR = (600_000, 7)
_DAY = (3_600_000, 25)
#: sampler ticks (one a second) between snapshots of each window, and between latency band swaps
_TICKS_MINUTE, _TICKS_HOUR, _TICKS_DAY, _TICKS_BANDS = 10, 600, 3600, 60
#: the sampler snapshots this many items, then lets the loop serve requests before it goes on: 10,000
#: topics and 5,000 groups are 30,000 items, ~125 ms to snapshot in one go every 10 s
_SAMPLE_CHUNK = 1000


class Snapshot:
    """One window of an item: ``sum`` (value gained), ``tps`` (per second), ``avgpt`` (value per event),
    ``times`` (events)."""

    __slots__ = ("avgpt", "sum", "times", "tps")

    def __init__(self, total: int = 0, tps: float = 0.0, avgpt: float = 0.0, times: int = 0) -> None:
        self.sum = total
        self.tps = tps
        self.avgpt = avgpt
        self.times = times

    def to_json(self) -> dict[str, object]:
        """BrokerStatsItem as fastjson writes it (fields in name order)."""
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}


class StatsItem:
    """A counter (``value``, ``times``) with its minute / hour / day snapshot lists of (time ms, times,
    value).  The counting side touches the two ints only."""

    __slots__ = ("day", "hour", "minute", "times", "value")

    def __init__(self) -> None:
        self.value = 0
        self.times = 0
        self.minute: deque[tuple[int, int, int]] = deque(maxlen=_MINUTE[1])
        self.hour: deque[tuple[int, int, int]] = deque(maxlen=_HOUR[1])
        self.day: deque[tuple[int, int, int]] = deque(maxlen=_DAY[1])

    def _sample(self, snapshots: deque[tuple[int, int, int]], period_ms: int, now_ms: int) -> None:
        if not snapshots:
            snapshots.append((now_ms - period_ms, 0, 0))
        snapshots.append((now_ms, self.times, self.value))

    def sample_minute(self, now_ms: int) -> None:
        self._sample(self.minute, _MINUTE[0], now_ms)

    def sample_hour(self, now_ms: int) -> None:
        self._sample(self.hour, _HOUR[0], now_ms)

    def sample_day(self, now_ms: int) -> None:
        self._sample(self.day, _DAY[0], now_ms)

    @staticmethod
    def _window(snapshots: deque[tuple[int, int, int]]) -> Snapshot:
        if not snapshots:
            return Snapshot()
        first_ms, first_times, first_value = snapshots[0]
        last_ms, last_times, last_value = snapshots[-1]
        total = last_value - first_value
        elapsed_ms = last_ms - first_ms
        tps = total * 1000.0 / elapsed_ms if elapsed_ms > 0 else 0.0
        times = last_times - first_times
        return Snapshot(total, tps, total / times if times > 0 else 0.0, times)

    def in_minute(self) -> Snapshot:
        return self._window(self.minute)

    def in_hour(self) -> Snapshot:
        return self._window(self.hour)

    def in_day(self) -> Snapshot:
        return self._window(self.day)


class StatsItemSet:
    """The items of one stats name, by key (created on first count)."""

    __slots__ = ("items", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: dict[str, StatsItem] = {}

    def item(self, key: str) -> StatsItem:
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem()
        return item

    def add(self, key: str, value: int, times: int) -> None:
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = StatsItem()
        item.value += value
        item.times += times

    def remove_where(self, matches: Callable[[str], bool]) -> None:
        for key in [k for k in self.items if matches(k)]:
            del self.items[key]


def next_local_midnight_ms(now_ms: int) -> int:
    """The next local midnight after *now_ms* (4.9.3's computeNextMorningTimeMillis)."""
    now = datetime.datetime.fromtimestamp(now_ms / 1000)
    midnight = (now + datetime.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(midnight.timestamp() * 1000)


class BrokerStats:
    """Every statistic of a broker.  *clock_ms*: wall time in ms (the sampler's and the tests' clock)."""

    def __init__(self, cluster_name: str, clock_ms: Callable[[], int] | None = None) -> None:
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.cluster_name = cluster_name
        self.sets = {name: StatsItemSet(name) for name in KNOWN_STATS_NAMES}
        now_ms = self.clock_ms()
        self.store = StoreStats(now_ms)
        #: topic -> its send counts (messages, bytes, requests) when the topic was deleted: its items
        #: start again from zero, as 4.9.3's onTopicDeleted drops them
        self._send_base: dict[str, tuple[int, int, int]] = {}
        #: SCHEDULE_TOPIC_XXXX -> [messages, bytes] of given-back messages stored for later delivery
        self._scheduled_back: dict[str, list[int]] = {}
        #: the BROKER_PUT_NUMS / BROKER_GET_NUMS items of this cluster, created when first counted as in
        #: 4.9.3 (a broker that stored nothing has no item to show)
        self._broker_put: StatsItem | None = None
        self._broker_get: StatsItem | None = None
        #: msgPut/GetTotal at the last two local midnights (0 until the broker has seen one, as 4.9.3)
        self.put_total_yesterday_morning = 0
        self.put_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self.get_total_today_morning = 0
        self._next_midnight_ms = next_local_midnight_ms(now_ms)
        self._ticks = 0

    # --- counting (the event loop's hot paths) -----------------------------------------------------------

    def _sync_sends(self) -> None:
        """Bring TOPIC_PUT_NUMS / TOPIC_PUT_SIZE / BROKER_PUT_NUMS up to the send counts, which the put path
        keeps in StoreStats' per-topic lists (one lookup a send; see Broker.count_put)."""
        for topic, counter in self.store.topic_puts.items():
            self._sync_topic(topic, counter)
        self._sync_broker_put()

    def _sync_topic(self, topic: str, counter: list[int]) -> None:
        """TOPIC_PUT_NUMS / TOPIC_PUT_SIZE of *topic* from its StoreStats *counter* (a view of one topic
        syncs that topic only: statsAll and the exporter view every topic in turn)."""
        _, _, count, wrote, requests = counter
        seen = self._send_base.get(topic)
        if seen is not None:
            count, wrote, requests = count - seen[0], wrote - seen[1], requests - seen[2]
        extra = self._scheduled_back.get(topic)
        if extra is not None:  # given-back messages stored for later delivery (sent_back)
            count, wrote, requests = count + extra[0], wrote + extra[1], requests + extra[0]
        if requests == 0:
            return
        nums, size = self.sets[TOPIC_PUT_NUMS].item(topic), self.sets[TOPIC_PUT_SIZE].item(topic)
        nums.value, nums.times = count, requests
        size.value, size.times = wrote, requests

    def _sync_broker_put(self) -> None:
        broker_total = sum(counter[2] for counter in self.store.topic_puts.values())
        if broker_total:
            if self._broker_put is None:
                self._broker_put = self.sets[BROKER_PUT_NUMS].item(self.cluster_name)
            self._broker_put.value = broker_total

    def sent_back(self, group: str, topic: str, stored_topic: str, wrote_bytes: int) -> None:
        """*group* gave back a message of *topic* (the topic it was consumed from: RETRY_TOPIC, else the
        message's own) and it was stored in *stored_topic*; a retry stored for later delivery (in
        SCHEDULE_TOPIC_XXXX) also counts as a put of that topic, as in 4.9.3."""
        self.sets[SNDBCK_PUT_NUMS].add(f"{topic}@{group}", 1, 1)
        if stored_topic == SCHEDULE_TOPIC:
            self.store.topic_counter(stored_topic)  # there already when the put was counted; _sync_sends walks these
            extra = self._scheduled_back.setdefault(stored_topic, [0, 0])
            extra[0] += 1
            extra[1] += wrote_bytes

    def delayed_delivered(self, message_count: int, wrote_bytes: int) -> None:
        """The schedule service moved a due message (*wrote_bytes* written) to its real topic: a get of
        SCHEDULE_CONSUMER from SCHEDULE_TOPIC_XXXX, as 4.9.3 counts it (its put: Broker._deliver_delayed)."""
        key = f"{SCHEDULE_TOPIC}@{SCHEDULE_CONSUMER_GROUP}"
        self.sets[GROUP_GET_NUMS].add(key, message_count, 1)
        self.sets[GROUP_GET_SIZE].add(key, wrote_bytes, 1)

    def pulled(self, group: str, topic: str, message_count: int, total_bytes: int, latency_ms: int, *,
               queue_id: int = 0) -> None:
        """A pull of queue *queue_id* that answered with *message_count* messages (*total_bytes* of records)."""
        key = f"{topic}@{group}"
        sets = self.sets
        sets[GROUP_GET_NUMS].add(key, message_count, 1)
        sets[GROUP_GET_SIZE].add(key, total_bytes, 1)
        sets[GROUP_GET_LATENCY].add(f"{queue_id}@{key}", latency_ms, 1)
        broker_get = self._broker_get
        if broker_get is None:
            broker_get = self._broker_get = self.sets[BROKER_GET_NUMS].item(self.cluster_name)
        broker_get.value += message_count

    def read_internally(self, group: str, topic: str, found: bool, message_count: int,
                        total_bytes: int) -> None:
        """The broker itself read *topic* as *group* (the transaction check reading the half and op topics
        as CID_RMQ_SYS_TRANS): a store get, found or not, and when it found messages a get of the group and
        of the broker, as 4.9.3 counts the reads of its transaction check."""
        self.store.got(found, message_count, 0)
        if not found:
            return
        key = f"{topic}@{group}"
        self.sets[GROUP_GET_NUMS].add(key, message_count, 1)
        self.sets[GROUP_GET_SIZE].add(key, total_bytes, 1)
        broker_get = self._broker_get
        if broker_get is None:
            broker_get = self._broker_get = self.sets[BROKER_GET_NUMS].item(self.cluster_name)
        broker_get.value += message_count

    def topic_deleted(self, topic: str) -> None:
        """Forget *topic*'s items (4.9.3's onTopicDeleted)."""
        prefix = topic + "@"
        self.sets[TOPIC_PUT_NUMS].items.pop(topic, None)
        self.sets[TOPIC_PUT_SIZE].items.pop(topic, None)
        counter = self.store.topic_puts.get(topic)
        if counter is not None:
            self._send_base[topic] = (counter[2], counter[3], counter[4])
        self._scheduled_back.pop(topic, None)
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS):
            self.sets[name].remove_where(lambda key: key.startswith(prefix))
        infix = "@" + prefix
        self.sets[GROUP_GET_LATENCY].remove_where(lambda key: infix in key)

    def group_deleted(self, group: str) -> None:
        """Forget *group*'s items (4.9.3's onGroupDeleted)."""
        suffix = "@" + group
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS, GROUP_GET_LATENCY):
            self.sets[name].remove_where(lambda key: key.endswith(suffix))

    # --- reading ------------------------------------------------------------------------------------------

    def item(self, stats_name: str, stats_key: str) -> StatsItem | None:
        """The item of *stats_name* / *stats_key*, None if there is none (unknown name or never counted)."""
        items = self.sets.get(stats_name)
        if items is None:
            return None
        if stats_name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE):
            counter = self.store.topic_puts.get(stats_key)
            if counter is not None:
                self._sync_topic(stats_key, counter)
        elif stats_name == BROKER_PUT_NUMS:
            self._sync_broker_put()
        return items.items.get(stats_key)

    def group_get_tps(self, group: str, topic: str) -> float:
        """GROUP_GET_NUMS per second over the last minute (4.9.3's tpsGroupGetNums)."""
        item = self.item(GROUP_GET_NUMS, f"{topic}@{group}")
        return 0.0 if item is None else item.in_minute().tps

    # --- sampling -----------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        """One sampler second: StoreStats every tick, the item windows every 10 s / 10 min / 1 h (from the
        first tick on, as 4.9.3 schedules them with no initial delay), the latency bands every minute, the
        midnight totals when a local midnight has passed."""
        for _ in self._tick_steps(now_ms):
            pass

    def _tick_steps(self, now_ms: int) -> Iterator[None]:
        """:meth:`tick`, pausing (a yield) after every ``_SAMPLE_CHUNK`` items it snapshots: :meth:`run` lets
        the loop serve requests there.  Every item of the tick is dated *now_ms* all the same."""
        n = self._ticks
        self._ticks = n + 1
        self.store.sample(now_ms)
        yield from self._sample_steps(now_ms, minute=n % _TICKS_MINUTE == 0, hour=n % _TICKS_HOUR == 0,
                                      day=n % _TICKS_DAY == 0)
        if n and n % _TICKS_BANDS == 0:
            self.store.swap_bands()
        if now_ms >= self._next_midnight_ms:
            self.record_midnight()
            self._next_midnight_ms = next_local_midnight_ms(now_ms)

    def sample_windows(self, now_ms: int, *, minute: bool = True, hour: bool = True, day: bool = True) -> None:
        """Snapshot every item's minute / hour / day window now (the sampler's 10 s, 10 min and 1 h
        steps; an admin or a test may take one between them)."""
        for _ in self._sample_steps(now_ms, minute=minute, hour=hour, day=day):
            pass

    def _sample_steps(self, now_ms: int, *, minute: bool, hour: bool, day: bool) -> Iterator[None]:
        self._sync_sends()
        if not (minute or hour or day):
            return
        # the items as they are now: counting may add some (and a deletion drop some) at a pause
        todo = [item for items in self.sets.values() for item in items.items.values()]
        for start in range(0, len(todo), _SAMPLE_CHUNK):
            if start:
                yield
            for item in todo[start:start + _SAMPLE_CHUNK]:
                if minute:
                    item.sample_minute(now_ms)
                if hour:
                    item.sample_hour(now_ms)
                if day:
                    item.sample_day(now_ms)

    def record_midnight(self) -> None:
        """Today's morning totals become yesterday's, and the current totals today's (4.9.3's
        BrokerStats.record, run at each local midnight)."""
        self.put_total_yesterday_morning = self.put_total_today_morning
        self.get_total_yesterday_morning = self.get_total_today_morning
        self.put_total_today_morning = self.store.put_message_count
        self.get_total_today_morning = self.store.get_transferred_count
        log.info("yesterday put message total: %d, get message total: %d",
                 self.put_total_today_morning - self.put_total_yesterday_morning,
                 self.get_total_today_morning - self.get_total_yesterday_morning)

    async def run(self, period_s: float = 1.0) -> None:
        """The sampler: :meth:`tick` every *period_s* on the loop's clock (no drift), until cancelled."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            try:
                for _ in self._tick_steps(self.clock_ms()):
                    await asyncio.sleep(0)  # a pause between chunks of items: requests are served there
            except Exception:  # a statistics bug must not stop the sampling for good
                log.exception("statistics sampling failed")
            due += period_s
            await asyncio.sleep(max(0.0, due - loop.time()))
