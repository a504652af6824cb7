"""VIEW_BROKER_STATS_DATA of one topic's TOPIC_PUT_NUMS / TOPIC_PUT_SIZE brings that topic's item up to date,
not every topic's: mqadmin statsAll and the exporter view every topic in turn, and a walk over all the
topics per view made a scrape of a broker with 10,000 topics cost it over a minute of its event loop
(4.9.3 answers each view from its one item)."""

from __future__ import annotations

from rocketstore.broker.broker_stats import BROKER_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStats


class _WalkCountingDict(dict[str, list[int]]):
    walks = 0

    def items(self):  # type: ignore[no-untyped-def, override]
        _WalkCountingDict.walks += 1
        return super().items()

    def values(self):  # type: ignore[no-untyped-def, override]
        _WalkCountingDict.walks += 1
        return super().values()

    def __iter__(self):  # type: ignore[no-untyped-def, override]
        _WalkCountingDict.walks += 1
        return super().__iter__()


def _sent(stats: BrokerStats, topic: str, count: int, wrote: int) -> None:
    counter = stats.store.topic_counter(topic)
    counter[0] += count
    counter[1] += wrote
    counter[2] += count
    counter[3] += wrote
    counter[4] += 1


def test_viewing_one_topic_does_not_walk_every_topic() -> None:
    stats = BrokerStats("C", lambda: 0)
    for i in range(50):
        _sent(stats, f"T{i}", 2, 200)
    stats.sent_back("g", "T0", "SCHEDULE_TOPIC_XXXX", 150)
    _sent(stats, "SCHEDULE_TOPIC_XXXX", 1, 90)
    stats.store.topic_puts = _WalkCountingDict(stats.store.topic_puts)
    _WalkCountingDict.walks = 0
    nums, size = stats.item(TOPIC_PUT_NUMS, "T7"), stats.item(TOPIC_PUT_SIZE, "T7")
    scheduled = stats.item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX")
    assert stats.item(TOPIC_PUT_NUMS, "NoSuchTopic") is None
    assert _WalkCountingDict.walks == 0
    assert nums is not None and size is not None and scheduled is not None
    assert (nums.value, nums.times, size.value, size.times) == (2, 1, 200, 1)
    assert (scheduled.value, scheduled.times) == (2, 2)  # the send and the given-back message
    broker_put = stats.item(BROKER_PUT_NUMS, "C")
    assert broker_put is not None and broker_put.value == 101


def test_a_topic_sent_to_after_its_first_view_counts_on() -> None:
    stats = BrokerStats("C", lambda: 0)
    _sent(stats, "T", 1, 100)
    first = stats.item(TOPIC_PUT_NUMS, "T")
    assert first is not None and first.value == 1
    _sent(stats, "T", 3, 300)  # a batch
    again = stats.item(TOPIC_PUT_NUMS, "T")
    assert again is first and (again.value, again.times) == (4, 2)
    stats.topic_deleted("T")
    assert stats.item(TOPIC_PUT_NUMS, "T") is None
    _sent(stats, "T", 1, 100)
    fresh = stats.item(TOPIC_PUT_NUMS, "T")
    assert fresh is not None and (fresh.value, fresh.times) == (1, 1)
