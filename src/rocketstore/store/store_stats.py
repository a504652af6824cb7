"""StoreStats: the store-side figures of GET_BROKER_RUNTIME_INFO, as 4.9.3's StoreStatsService keeps them.

Counters (plain ints and dicts, bumped by the code that makes the put or the get):

- messages and bytes put, per stored topic (a delayed message counts under SCHEDULE_TOPIC_XXXX, a half
  message under RMQ_SYS_TRANS_HALF_TOPIC, as the record is written), and failed puts;
- the put latency in whole milliseconds: the largest since start (putMessageEntireTimeMax) and a count per
  latency band, the 13 bands 4.9.3 prints (``[<=0ms]``, ``[0~10ms]``, ... ``[10s~]``); the bands shown are
  those of the last whole minute (4.9.3 swaps the band counters every 60 s and shows the finished set, so
  the value is ``"null"`` during the first minute, as 4.9.3 answers);
- gets that found messages, gets that did not, messages handed out, and the slowest get.

:meth:`StoreStats.sample` (once a second) records the four running totals; a rate over the last 10, 60 or
600 s is (last - the sample that many seconds back) / elapsed, and is ``""`` until that many samples exist,
the way 4.9.3's putTps / getFoundTps / getMissTps / getTransferedTps strings read.  Numbers are written as
Java's ``Double.toString`` writes them (:func:`java_double`).

Here the broker bumps the counters (the put and get paths run on its event loop), so the class has no
lock and no clock of its own: the sampler passes the time in.  Not thread-safe: use from one thread.
Pure: no I/O, no asyncio.
"""

from __future__ import annotations

import math
from collections import deque
from decimal import Decimal

__all__ = ["LATENCY_BAND_NAMES", "SAMPLES_KEPT", "StoreStats", "java_double", "latency_band"]

#: 4.9.3's names of the put latency bands (PUT_MESSAGE_ENTIRE_TIME_MAX_DESC)
LATENCY_BAND_NAMES = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
                      "[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
#: upper bounds (exclusive, ms) of bands 1..11; band 0 is <= 0 ms, band 12 everything from 10 s
_BAND_LIMITS_MS = (10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)
#: one sample a second, ten minutes of them plus the one the oldest rate starts from
SAMPLES_KEPT = 601
#: the rate windows (seconds) of the runtime info's tps strings
TPS_WINDOWS_S = (10, 60, 600)


def latency_band(elapsed_ms: int) -> int:
    """The band index of a put that took *elapsed_ms* whole milliseconds."""
    if elapsed_ms <= 0:
        return 0
    for i, limit in enumerate(_BAND_LIMITS_MS):
        if elapsed_ms < limit:
            return i + 1
    return 12


def java_double(value: float) -> str:
    """*value* as Java's ``Double.toString``: ``0.0``, ``12.5``, ``1.0E7``, ``1.0E-4``."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)  # shortest round-trip digits; never in exponent form within this range
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(str(d) for d in digits).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


class StoreStats:
    def __init__(self, boot_time_ms: int) -> None:
        #: when the store's statistics started (the runtime info's bootTimestamp)
        self.boot_time_ms = boot_time_ms
        #: stored topic -> [messages put, bytes written, then the broker's send figures: messages stored by
        #: sends, their bytes, send requests]; one list per topic so that a send costs one lookup
        self.topic_puts: dict[str, list[int]] = {}
        self.put_failed_count = 0
        self.put_max_ms = 0
        #: puts per latency band since the last swap; the finished minute is :attr:`last_bands`
        self.bands = [0] * len(LATENCY_BAND_NAMES)
        self.last_bands: list[int] | None = None
        self.get_found_count = 0
        self.get_miss_count = 0
        self.get_transferred_count = 0
        self.get_max_ms = 0
        #: a slave's records taken from its master, topic -> [records, bytes] (MessageStore.count_replicated,
        #: written by the dispatch thread): 4.9.3's slave counts them as puts (putTps, putMessageTimesTotal)
        self.replica_puts: dict[str, list[int]] | None = None
        #: (time ms, messages put, gets found, gets missed, messages handed out), one a second
        self._samples: deque[tuple[int, int, int, int, int]] = deque(maxlen=SAMPLES_KEPT)

    # --- counting (hot paths inline these: see Broker.count_put) -----------------------------------------

    def topic_counter(self, topic: str) -> list[int]:
        """The counter list of *topic* (see :attr:`topic_puts`), created at zero."""
        counter = self.topic_puts.get(topic)
        if counter is None:
            counter = self.topic_puts[topic] = [0, 0, 0, 0, 0]
        return counter

    def put_took(self, elapsed_ms: int) -> None:
        """A put (ok or not) that took *elapsed_ms*: its latency band and the maximum."""
        if elapsed_ms <= 0:
            self.bands[0] += 1
            return
        self.bands[latency_band(elapsed_ms)] += 1
        self.put_max_ms = max(self.put_max_ms, elapsed_ms)

    def got(self, found: bool, message_count: int, elapsed_ms: int) -> None:
        """A get: FOUND with *message_count* messages, or not found."""
        if found:
            self.get_found_count += 1
            self.get_transferred_count += message_count
        else:
            self.get_miss_count += 1
        self.get_max_ms = max(self.get_max_ms, elapsed_ms)

    # --- totals -------------------------------------------------------------------------------------------

    @property
    def put_message_count(self) -> int:
        """Messages put since start, every topic (putMessageTimesTotal / msgPutTotalTodayNow)."""
        return sum(c[0] for c in self.topic_puts.values()) + self._replicated(0)

    @property
    def put_message_bytes(self) -> int:
        return sum(c[1] for c in self.topic_puts.values()) + self._replicated(1)

    def _replicated(self, column: int) -> int:
        replica = self.replica_puts
        if not replica:
            return 0
        return sum(c[column] for c in list(replica.values()))  # a copy: the dispatch thread adds topics

    # --- sampling -----------------------------------------------------------------------------------------

    def sample(self, now_ms: int) -> None:
        """Record the running totals at *now_ms* (4.9.3 samples once a second)."""
        self._samples.append((now_ms, self.put_message_count, self.get_found_count, self.get_miss_count,
                              self.get_transferred_count))

    def swap_bands(self) -> None:
        """End the latency minute: the counts so far become the ones shown, and counting starts again."""
        self.last_bands, self.bands = self.bands, [0] * len(LATENCY_BAND_NAMES)

    def rate(self, column: int, window_s: int) -> float | None:
        """Per second over the last *window_s* samples of *column* (1 put, 2 found, 3 missed, 4 handed
        out); None until there are more than *window_s* samples."""
        samples = self._samples
        if len(samples) <= window_s:
            return None
        first, last = samples[-(window_s + 1)], samples[-1]
        elapsed_ms = last[0] - first[0]
        if elapsed_ms <= 0:
            return None
        return (last[column] - first[column]) * 1000.0 / elapsed_ms

    def _rates(self, column: int) -> str:
        parts = []
        for window in TPS_WINDOWS_S:
            value = self.rate(column, window)
            parts.append("" if value is None else java_double(value))
        return " ".join(parts)

    def _total_get_rates(self) -> str:
        parts = []
        for window in TPS_WINDOWS_S:
            found, missed = self.rate(2, window), self.rate(3, window)
            parts.append(java_double((found or 0.0) + (missed or 0.0)))
        return " ".join(parts)

    def distribution_text(self) -> str:
        """``[<=0ms]:N [0~10ms]:N ... [10s~]:N `` of the last finished minute; ``null`` before the first."""
        bands = self.last_bands
        if bands is None:
            return "null"
        return "".join(f"{name}:{count} " for name, count in zip(LATENCY_BAND_NAMES, bands))

    def runtime_info(self, now_ms: int) -> dict[str, str]:
        """The runtime info entries 4.9.3's StoreStatsService contributes, its formats included (a total of
        0 puts is reported as putMessageTimesTotal 1, and the average size divides by it, as 4.9.3 does)."""
        total = self.put_message_count or 1
        size = self.put_message_bytes
        return {
            "bootTimestamp": str(self.boot_time_ms),
            "runtime": format_runtime(now_ms - self.boot_time_ms),
            "putMessageEntireTimeMax": str(self.put_max_ms),
            "putMessageTimesTotal": str(total),
            "putMessageFailedTimes": str(self.put_failed_count),
            "putMessageSizeTotal": str(size),
            "putMessageDistributeTime": self.distribution_text(),
            "putMessageAverageSize": java_double(size / total),
            # 4.9.3 keeps the field but nothing raises it: its value is always 0
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(self.get_max_ms),
            "putTps": self._rates(1),
            "getFoundTps": self._rates(2),
            "getMissTps": self._rates(3),
            "getTotalTps": self._total_get_rates(),
            "getTransferedTps": self._rates(4),
        }


def format_runtime(elapsed_ms: int) -> str:
    """``[ D days, H hours, M minutes, S seconds ]``, 4.9.3's runtime text."""
    elapsed_ms = max(0, elapsed_ms)
    days, rest = divmod(elapsed_ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"[ {days:,} days, {hours} hours, {minutes} minutes, {rest // 1000} seconds ]"
