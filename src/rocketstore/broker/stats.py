"""Consume rates per (group, topic): the messages each pull hands out, in one-second buckets; the rate is
the number handed out in the last 60 s divided by 60.

Not what GET_CONSUME_STATS / GET_BROKER_CONSUME_STATS answer as ``consumeTps`` (mqadmin's "Consume TPS"):
those report 4.9.3's tpsGroupGetNums, the last-minute tps of the GROUP_GET_NUMS item
(BrokerStats.group_get_tps), the figure VIEW_BROKER_STATS_DATA and the exporter show.  Loop-bound (no
locks): fed by the pull handler on the broker's event loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["WINDOW_S", "ConsumeRates"]

WINDOW_S = 60


class ConsumeRates:
    def __init__(self, clock_s: Callable[[], float] = time.monotonic) -> None:
        self._clock_s = clock_s
        self._buckets: dict[tuple[str, str], deque[list[int]]] = {}

    def record(self, group: str, topic: str, count: int) -> None:
        """*count* messages of *topic* handed to *group* now."""
        if count <= 0:
            return
        second = int(self._clock_s())
        buckets = self._buckets.setdefault((group, topic), deque())
        if buckets and buckets[-1][0] == second:
            buckets[-1][1] += count
        else:
            buckets.append([second, count])
        self._trim(buckets, second)

    def tps(self, group: str, topic: str) -> float:
        """Messages per second handed to *group* from *topic* over the last minute."""
        buckets = self._buckets.get((group, topic))
        if not buckets:
            return 0.0
        self._trim(buckets, int(self._clock_s()))
        if not buckets:
            del self._buckets[(group, topic)]
            return 0.0
        return sum(count for _, count in buckets) / WINDOW_S

    @staticmethod
    def _trim(buckets: deque[list[int]], now_s: int) -> None:
        while buckets and buckets[0][0] <= now_s - WINDOW_S:
            buckets.popleft()
