"""The broker statistics with an injected clock: stat item windows sampled every 10 s / 10 min / 1 h as
4.9.3's StatsItem keeps them, the store's 10 / 60 / 600 s rates and latency bands, the midnight totals, the
send counts the put path keeps, and the value formats of the runtime info and the config update."""

from __future__ import annotations

import datetime

import pytest

from rocketstore.broker.broker import Broker
from rocketstore.broker.broker_stats import (
    BROKER_PUT_NUMS,
    GROUP_GET_LATENCY,
    GROUP_GET_NUMS,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    BrokerStats,
    StatsItem,
    next_local_midnight_ms,
)
from rocketstore.broker.config import BrokerConfig
from rocketstore.broker.stats_admin import ConfigUpdateError, config_text, human_bytes, updated_configs
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.store.config import StoreConfig
from rocketstore.store.results import PutMessageStatus, PutResult
from rocketstore.store.store_stats import StoreStats, format_runtime, java_double, latency_band

T0 = 1_700_000_000_000


class Clock:
    def __init__(self, now_ms: int = T0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def run_ticks(stats: BrokerStats, clock: Clock, seconds: int) -> None:
    """The sampler's ticks, one a second, for *seconds* seconds (the first at the current time)."""
    for _ in range(seconds):
        stats.tick(clock.now_ms)
        clock.now_ms += 1000


def test_a_new_item_window_starts_from_a_zero_snapshot_one_period_back() -> None:
    item = StatsItem()
    item.value, item.times = 30, 3
    item.sample_minute(T0)
    window = item.in_minute()
    assert (window.sum, window.times) == (30, 3)
    assert window.tps == pytest.approx(3.0)  # 30 over the 10 s since the zero snapshot
    assert window.avgpt == pytest.approx(10.0)


def test_an_item_never_sampled_has_an_empty_window() -> None:
    window = StatsItem().in_hour()
    assert (window.sum, window.tps, window.avgpt) == (0, 0.0, 0.0)


def test_the_minute_window_covers_the_last_six_ten_second_samples() -> None:
    clock = Clock()
    stats = BrokerStats("C", clock)
    stats.sets[GROUP_GET_NUMS].add("T@g", 0, 0)
    for second in range(200):
        stats.tick(clock.now_ms)
        stats.sets[GROUP_GET_NUMS].add("T@g", 5, 1)  # 5 messages a second, one pull
        clock.now_ms += 1000
        if second == 0:
            assert stats.item(GROUP_GET_NUMS, "T@g").in_minute().sum == 0  # type: ignore[union-attr]
    item = stats.item(GROUP_GET_NUMS, "T@g")
    assert item is not None and len(item.minute) == 7
    minute = item.in_minute()
    # 7 snapshots 10 s apart: the last 60 s of counting
    assert minute.sum == 300 and minute.times == 60
    assert minute.tps == pytest.approx(5.0) and minute.avgpt == pytest.approx(5.0)
    assert stats.group_get_tps("g", "T") == pytest.approx(5.0)


def test_the_hour_and_day_windows_are_sampled_every_ten_minutes_and_every_hour() -> None:
    clock = Clock()
    stats = BrokerStats("C", clock)
    stats.sets[TOPIC_PUT_SIZE].add("T", 0, 0)
    for _ in range(7201):  # two hours and the tick that closes them
        stats.tick(clock.now_ms)
        stats.sets[TOPIC_PUT_SIZE].add("T", 100, 1)
        clock.now_ms += 1000
    item = stats.item(TOPIC_PUT_SIZE, "T")
    assert item is not None
    assert [t for t, _, _ in item.hour][-2:] == [T0 + 6600_000, T0 + 7200_000]
    hour = item.in_hour()  # 7 snapshots 10 min apart: the last hour
    assert hour.sum == 3600 * 100 and hour.tps == pytest.approx(100.0)
    day = item.in_day()  # the zero snapshot an hour before the first, then one an hour
    assert len(item.day) == 4 and day.sum == 7200 * 100
    assert day.tps == pytest.approx(7200 * 100 / (3 * 3600))


def test_store_rates_read_blank_until_there_are_enough_one_second_samples() -> None:
    stats = StoreStats(T0)
    stats.topic_counter("T")
    for second in range(12):
        stats.sample(T0 + second * 1000)
        stats.topic_puts["T"][0] += 20  # 20 puts a second
        stats.got(True, 3, 0)
        stats.got(False, 0, 0)
    info = stats.runtime_info(T0 + 11_000)
    assert info["putTps"] == "20.0  "  # 10 s window only: 60 s and 600 s need more samples
    assert info["getFoundTps"] == "1.0  "
    assert info["getMissTps"] == "1.0  "
    assert info["getTransferedTps"] == "3.0  "
    assert info["getTotalTps"] == "2.0 0.0 0.0"  # 4.9.3 adds zeros for the windows it cannot compute
    assert info["putMessageTimesTotal"] == "240"


def test_six_hundred_seconds_of_samples_give_all_three_rates() -> None:
    stats = StoreStats(T0)
    counter = stats.topic_counter("T")
    for second in range(700):
        stats.sample(T0 + second * 1000)
        counter[0] += 1 if second < 650 else 4
    # last sample 650 + 49 * 4 = 846; 60 s back (second 639) 639; 600 s back (second 99) 99
    assert stats.runtime_info(T0)["putTps"] == "4.0 3.45 1.245"


def test_latency_bands_show_the_last_finished_minute_and_null_before_it() -> None:
    clock = Clock()
    stats = BrokerStats("C", clock)
    for elapsed_ms in (0, 0, 3, 12, 700, 12_000):
        stats.store.put_took(elapsed_ms)
    assert stats.store.runtime_info(T0)["putMessageDistributeTime"] == "null"
    run_ticks(stats, clock, 61)
    text = stats.store.runtime_info(T0)["putMessageDistributeTime"]
    assert text == ("[<=0ms]:2 [0~10ms]:1 [10~50ms]:1 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:1 "
                    "[1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:1 ")
    assert stats.store.runtime_info(T0)["putMessageEntireTimeMax"] == "12000"
    assert [latency_band(ms) for ms in (-1, 9, 10, 49, 999, 1000, 9999, 10000)] == [0, 1, 2, 2, 6, 7, 11, 12]


def test_midnight_moves_today_morning_totals_to_yesterday() -> None:
    start = int(datetime.datetime(2026, 3, 1, 23, 59, 58).timestamp() * 1000)
    clock = Clock(start)
    stats = BrokerStats("C", clock)
    assert next_local_midnight_ms(start) == int(datetime.datetime(2026, 3, 2).timestamp() * 1000)
    stats.store.topic_counter("T")[0] = 7
    stats.store.get_transferred_count = 3
    run_ticks(stats, clock, 2)
    assert (stats.put_total_today_morning, stats.get_total_today_morning) == (0, 0)
    run_ticks(stats, clock, 1)  # 00:00:00
    assert (stats.put_total_today_morning, stats.get_total_today_morning) == (7, 3)
    assert stats.put_total_yesterday_morning == 0
    stats.store.topic_counter("T")[0] = 10
    clock.now_ms += 86_400_000
    stats.tick(clock.now_ms)
    assert (stats.put_total_yesterday_morning, stats.put_total_today_morning) == (7, 10)


def _put(topic: str, count: int = 1, wrote: int = 100, status: PutMessageStatus = PutMessageStatus.PUT_OK
         ) -> PutResult:
    return PutResult(status, 0, wrote, 0, T0, count, topic, 0)


def test_the_put_path_counts_sends_and_other_puts_apart() -> None:
    broker = Broker(BrokerConfig(broker_name="b", broker_cluster_name="C"))
    broker.count_put(_put("T", 1, 100), sent=True)
    broker.count_put(_put("T", 3, 300), sent=True)  # a batch of three
    broker.count_put(_put("T", 1, 50))  # not a send (a schedule delivery, a transaction record, ...)
    broker.count_put(_put("T", 1, 70, PutMessageStatus.FLUSH_DISK_TIMEOUT), sent=True)  # stored all the same
    broker.count_put(_put("T", 0, 0, PutMessageStatus.MESSAGE_ILLEGAL), sent=True)
    assert broker.put_count == 6
    store_info = broker.stats.store.runtime_info(T0)
    assert (store_info["putMessageSizeTotal"], store_info["putMessageFailedTimes"]) == ("520", "1")
    nums, size = broker.stats.item(TOPIC_PUT_NUMS, "T"), broker.stats.item(TOPIC_PUT_SIZE, "T")
    assert nums is not None and size is not None
    assert (nums.value, nums.times, size.value, size.times) == (5, 3, 470, 3)
    broker_put = broker.stats.item(BROKER_PUT_NUMS, "C")
    assert broker_put is not None and (broker_put.value, broker_put.times) == (5, 0)
    assert broker.stats.item(TOPIC_PUT_NUMS, "Other") is None


def test_a_deleted_topic_starts_its_items_again_from_zero() -> None:
    broker = Broker(BrokerConfig(broker_name="b", broker_cluster_name="C"))
    broker.count_put(_put("T", 2, 200), sent=True)
    broker.stats.sets[GROUP_GET_NUMS].add("T@g", 2, 1)
    broker.stats.sent_back("g", "T", "%RETRY%g", 90)
    broker.stats.topic_deleted("T")
    assert broker.stats.item(TOPIC_PUT_NUMS, "T") is None
    assert broker.stats.item(GROUP_GET_NUMS, "T@g") is None and broker.stats.item(SNDBCK_PUT_NUMS, "T@g") is None
    broker.count_put(_put("T", 1, 100), sent=True)
    nums = broker.stats.item(TOPIC_PUT_NUMS, "T")
    assert nums is not None and (nums.value, nums.times) == (1, 1)
    broker_put = broker.stats.item(BROKER_PUT_NUMS, "C")
    assert broker_put is not None and broker_put.value == 3  # the broker's total does not go back


def test_a_retry_stored_for_later_counts_as_a_put_of_the_schedule_topic() -> None:
    stats = BrokerStats("C", Clock())
    stats.sent_back("g", "T", "SCHEDULE_TOPIC_XXXX", 150)
    stats.sent_back("g", "T", "%DLQ%g", 150)
    back = stats.item(SNDBCK_PUT_NUMS, "T@g")
    assert back is not None and (back.value, back.times) == (2, 2)
    nums, size = stats.item(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX"), stats.item(TOPIC_PUT_SIZE, "SCHEDULE_TOPIC_XXXX")
    assert nums is not None and size is not None and (nums.value, size.value) == (1, 150)
    assert stats.item(TOPIC_PUT_NUMS, "%DLQ%g") is None


def test_pulls_count_per_topic_at_group_and_for_the_broker() -> None:
    stats = BrokerStats("C", Clock())
    stats.pulled("g", "T", 4, 400, 3, queue_id=1)
    stats.pulled("g", "T", 2, 200, 5, queue_id=1)
    nums, latency = stats.item(GROUP_GET_NUMS, "T@g"), stats.item(GROUP_GET_LATENCY, "1@T@g")
    assert nums is not None and latency is not None
    assert (nums.value, nums.times, latency.value, latency.times) == (6, 2, 8, 2)
    assert stats.item("BROKER_GET_NUMS", "C").value == 6  # type: ignore[union-attr]
    assert stats.item("GROUP_GET_FROM_DISK_NUMS", "T@g") is None  # a name 4.9.3 knows but never feeds
    assert stats.item("NO_SUCH_STATS", "T@g") is None


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0.0"), (1.0, "1.0"), (12.5, "12.5"), (0.1, "0.1"), (1 / 3, "0.3333333333333333"), (0.001, "0.001"),
    (0.0005, "5.0E-4"), (1.25e-5, "1.25E-5"), (9999999.0, "9999999.0"), (1e7, "1.0E7"), (123456789.0, "1.23456789E8"),
    (-2.5, "-2.5"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
])
def test_numbers_are_written_as_java_double_to_string_writes_them(value: float, text: str) -> None:
    assert java_double(value) == text


def test_sizes_and_run_times_use_4_9_3_texts() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1024, 1536, 5 << 30)] == ["0 B", "1023 B", "1.0 KiB", "1.5 KiB",
                                                                        "5.0 GiB"]
    assert format_runtime(((2 * 24 + 3) * 60 + 4) * 60_000 + 5_999) == "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"
    info = StoreStats(T0).runtime_info(T0)
    assert (info["putMessageTimesTotal"], info["putMessageAverageSize"]) == ("1", "0.0")  # 4.9.3 divides by 1


def test_a_config_update_converts_values_as_broker_conf_does_and_refuses_whole() -> None:
    broker = Broker(BrokerConfig(broker_name="b"), StoreConfig(store_path_root_dir="/tmp/none"))
    props = parse_properties_text("# comment\nbrokerPermission = 4\nflushIntervalCommitLog: 700\n"
                                  "autoCreateTopicEnable false\n")
    assert props == {"brokerPermission": "4", "flushIntervalCommitLog": "700", "autoCreateTopicEnable": "false"}
    update = updated_configs(broker, props)
    new_broker, new_store = update.broker_config, update.store_config
    assert (new_broker.broker_permission, new_broker.auto_create_topic_enable) == (4, False)
    assert new_store.flush_interval_commit_log_ms == 700
    # as 4.9.3's Configuration.update: unknown keys and values a setter cannot take are left as they were
    # (tests/unit/test_hunt15_admin_config_update.py); a value the config refuses changes nothing
    for bad, why in [({"brokerPermission": "4", "listenPort": "70000"}, "out of range"),
                     ({"brokerName": ""}, "brokerName must not be empty")]:
        with pytest.raises(ConfigUpdateError, match=why):
            updated_configs(broker, bad)
    assert broker.config.broker_permission == 6  # nothing was applied


def test_config_text_uses_broker_conf_names() -> None:
    broker = Broker(BrokerConfig(broker_name="b", broker_ip1="10.0.0.1"),
                    StoreConfig(store_path_root_dir="/tmp/none", flush_interval_commit_log_ms=700))
    lines = config_text(broker).splitlines()
    assert "brokerName=b" in lines and "brokerIP1=10.0.0.1" in lines and "flushIntervalCommitLog=700" in lines
    assert "autoCreateTopicEnable=true" in lines and "mappedFileSizeCommitLog=1073741824" in lines
    # unset: the address haServerAddr is registered with, as 4.9.3 always has one (its host address)
    assert "brokerIP2=10.0.0.1" in lines
