"""Consume rates: messages handed out per (group, topic) over the last minute, per second."""

from __future__ import annotations

from rocketstore.broker.stats import WINDOW_S, ConsumeRates


def test_rate_is_the_last_minute_of_messages_per_second_for_each_group_and_topic() -> None:
    now = [1000.0]
    rates = ConsumeRates(lambda: now[0])
    assert rates.tps("g", "t") == 0.0
    rates.record("g", "t", 30)
    now[0] += 0.5
    rates.record("g", "t", 30)  # same second: one bucket
    now[0] += 10
    rates.record("g", "t", 60)
    rates.record("g", "other", 6)
    rates.record("h", "t", 0)  # nothing handed out: nothing recorded
    assert rates.tps("g", "t") == 120 / WINDOW_S
    assert rates.tps("g", "other") == 6 / WINDOW_S
    assert rates.tps("h", "t") == 0.0
    now[0] = 1000.0 + WINDOW_S  # the first second has left the window
    assert rates.tps("g", "t") == 60 / WINDOW_S
    now[0] += WINDOW_S
    assert rates.tps("g", "t") == 0.0 and rates.tps("g", "other") == 0.0
