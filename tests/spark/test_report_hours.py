"""``pipeline report``'s per-hour traffic is in UTC, as its tables and charts say, whatever the time zone of
the machine (TZ) and of the Spark session: a +05:30 zone must not turn 01:00 UTC into 06:30."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.message.system_topics import is_system_topic
from rocketstore.spark.report import traffic

pytestmark = pytest.mark.spark


def _expected_hours(dump: dict[str, Any]) -> Counter[datetime]:
    hours: Counter[datetime] = Counter()
    for topic in dump["topics"]:
        if is_system_topic(topic["topic"]):
            continue
        for queue in topic["queues"]:
            for m in queue["messages"]:
                at = datetime.fromtimestamp(m["storeTimestamp"] // 1000, UTC)
                hours[at.replace(minute=0, second=0, tzinfo=None)] += 1
    return hours


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_traffic_hours_are_utc_in_any_time_zone(spark: Any, golden_dir: Path,
                                                golden_dump: Callable[[str], dict[str, Any]],
                                                monkeypatch: pytest.MonkeyPatch, zone: str) -> None:
    saved = spark.conf.get("spark.sql.session.timeZone")
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        rows = traffic(spark, str(golden_dir / "stores" / "clean"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
        monkeypatch.undo()
        time.tzset()
    got: Counter[datetime] = Counter()
    for r in rows:
        got[r.hour] += r.message_count
    assert got == _expected_hours(golden_dump("clean"))
