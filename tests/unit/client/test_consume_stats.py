"""ConsumeStats: the last minute's rates and the last hour's failures, per topic, from one-second buckets."""

from __future__ import annotations

import pytest

from rocketstore.client.consume_stats import ConsumeStats


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_rates_are_per_second_of_the_time_since_start_until_a_minute_has_passed() -> None:
    clock = Clock()
    stats = ConsumeStats(clock)
    clock.t += 10
    stats.pulled("T", 20.0, 32)
    stats.pulled("T", 40.0, 8)
    stats.consumed("T", 5.0, 30, 0)
    stats.consumed("T", 15.0, 8, 2)
    s = stats.status("T")
    assert s.pull_rt == pytest.approx(30.0) and s.pull_tps == pytest.approx(40 / 10)
    assert s.consume_rt == pytest.approx(10.0)
    assert s.consume_ok_tps == pytest.approx(38 / 10) and s.consume_failed_tps == pytest.approx(2 / 10)
    assert s.consume_failed_msgs == 2
    assert stats.status("Other").pull_tps == 0 and stats.status("Other").consume_rt == 0


def test_old_buckets_leave_the_minute_then_the_hour() -> None:
    clock = Clock()
    stats = ConsumeStats(clock)
    stats.consumed("T", 1.0, 0, 5)
    clock.t += 61
    stats.consumed("T", 3.0, 60, 0)
    s = stats.status("T")
    assert s.consume_failed_tps == 0 and s.consume_failed_msgs == 5  # out of the minute, in the hour
    assert s.consume_ok_tps == pytest.approx(1.0) and s.consume_rt == pytest.approx(3.0)
    clock.t += 3600
    stats.pulled("T", 1.0, 1)
    s = stats.status("T")
    assert s.consume_failed_msgs == 0 and s.consume_ok_tps == 0
    assert len(stats._topics["T"]) == 1  # expired buckets are dropped as new ones come
