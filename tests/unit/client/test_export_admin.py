"""The pure parts of client.export_admin: 4.9.3's compute24HourSum fallbacks, the reading of a runtime rate
string, the cluster merge of exportMetadata, and the version names exportMetrics writes."""

from __future__ import annotations

from rocketstore.client.admin_types import BrokerStatsData, StatsWindow
from rocketstore.client.export_admin import MergedMetadata, _first_rate, _merge, day_sum, version_desc


def stats(minute: int, hour: int, day: int) -> BrokerStatsData:
    return BrokerStatsData(StatsWindow(minute, 0.0, 0.0), StatsWindow(hour, 0.0, 0.0), StatsWindow(day, 0.0, 0.0))


def test_day_sum_falls_back_to_the_hour_then_the_minute_window() -> None:
    assert day_sum(stats(3, 7, 9)) == 9
    assert day_sum(stats(3, 7, 0)) == 7  # a broker up for less than an hour's snapshot
    assert day_sum(stats(3, 0, 0)) == 3
    assert day_sum(stats(0, 0, 0)) == 0


def test_first_rate_reads_the_ten_second_figure_and_blank_as_zero() -> None:
    assert _first_rate("12.5 11.0 10.25") == 12.5
    assert _first_rate("  ") == 0.0  # no samples yet: 4.9.3's rate string is three blanks
    assert _first_rate(None) == 0.0


def test_merge_sums_the_named_counts_and_keeps_the_last_masters_other_fields() -> None:
    into: dict[str, dict[str, object]] = {}
    _merge(into, {"T": {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}}, ("readQueueNums",
                                                                                               "writeQueueNums"))
    _merge(into, {"T": {"topicName": "T", "readQueueNums": 2, "writeQueueNums": 3, "perm": 4},
                  "U": {"topicName": "U", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}},
           ("readQueueNums", "writeQueueNums"))
    assert into == {"T": {"topicName": "T", "readQueueNums": 6, "writeQueueNums": 7, "perm": 4},
                    "U": {"topicName": "U", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}}


def test_merged_metadata_keeps_the_tables_asked_for_and_the_export_time() -> None:
    merged = MergedMetadata({"T": {}}, {"G": {}}, 42)
    assert merged.to_json() == {"topicConfigTable": {"T": {}}, "subscriptionGroupTable": {"G": {}}, "exportTime": 42}
    assert merged.to_json(groups=False) == {"topicConfigTable": {"T": {}}, "exportTime": 42}
    assert merged.to_json(topics=False) == {"subscriptionGroupTable": {"G": {}}, "exportTime": 42}


def test_version_desc_names_known_ordinals() -> None:
    assert version_desc(399) == "V4_9_3"
    assert version_desc(5) == "V3_0_0_BETA4"
