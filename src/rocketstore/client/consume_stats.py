"""A push consumer's per-topic pull and consume figures, for the running info a broker asks it for.

RocketMQ's ConsumerStatsManager reports, per topic, the last minute's average pull round trip (a pull
that found messages, long-poll wait included), messages pulled per second, average handler time, messages
consumed per second (OK and failed apart) and the messages that failed in the last hour.  Here they are
kept in one-second buckets (at most an hour of them per topic, whatever the message rate), so a report is
a sum over at most 3,600 buckets.

Loop-bound like the consumer that owns it; the clock is injectable for tests.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from rocketstore.remoting.consumer_bodies import ConsumeStatusInfo

__all__ = ["ConsumeStats"]

MINUTE_S = 60
HOUR_S = 3600


class _Bucket:
    __slots__ = ("consume_calls", "consume_rt_ms", "failed", "ok", "pull_rt_ms", "pulled", "pulls", "second")

    def __init__(self, second: int) -> None:
        self.second = second
        self.pulls = 0
        self.pull_rt_ms = 0.0
        self.pulled = 0
        self.consume_calls = 0
        self.consume_rt_ms = 0.0
        self.ok = 0
        self.failed = 0


class ConsumeStats:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._topics: dict[str, deque[_Bucket]] = {}

    def _bucket(self, topic: str) -> _Bucket:
        second = int(self._clock())
        buckets = self._topics.get(topic)
        if buckets is None:
            buckets = self._topics[topic] = deque()
        if not buckets or buckets[-1].second != second:
            buckets.append(_Bucket(second))
            while buckets[0].second <= second - HOUR_S:
                buckets.popleft()
        return buckets[-1]

    def pulled(self, topic: str, rt_ms: float, count: int) -> None:
        """A pull of *topic* that found *count* messages took *rt_ms*."""
        b = self._bucket(topic)
        b.pulls += 1
        b.pull_rt_ms += rt_ms
        b.pulled += count

    def consumed(self, topic: str, rt_ms: float, ok: int, failed: int) -> None:
        """One handler call on messages of *topic* took *rt_ms*; *ok* of them were consumed, *failed* not."""
        b = self._bucket(topic)
        b.consume_calls += 1
        b.consume_rt_ms += rt_ms
        b.ok += ok
        b.failed += failed

    def status(self, topic: str) -> ConsumeStatusInfo:
        """The last minute's rates for *topic* (per second of the minute, or of the time since this
        consumer started when that is shorter) and the last hour's failed messages."""
        now = self._clock()
        span = max(1.0, min(float(MINUTE_S), now - self._started))
        minute_from = int(now) - MINUTE_S
        pulls = pulled = calls = ok = failed = failed_hour = 0
        pull_rt = consume_rt = 0.0
        for b in self._topics.get(topic, ()):
            if b.second <= int(now) - HOUR_S:
                continue
            failed_hour += b.failed
            if b.second <= minute_from:
                continue
            pulls += b.pulls
            pull_rt += b.pull_rt_ms
            pulled += b.pulled
            calls += b.consume_calls
            consume_rt += b.consume_rt_ms
            ok += b.ok
            failed += b.failed
        return ConsumeStatusInfo(pull_rt=pull_rt / pulls if pulls else 0.0, pull_tps=pulled / span,
                                 consume_rt=consume_rt / calls if calls else 0.0, consume_ok_tps=ok / span,
                                 consume_failed_tps=failed / span, consume_failed_msgs=failed_hour)
