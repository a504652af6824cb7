"""Kafka's per-partition timestamp options (``startingOffsetsByTimestamp``, ``endingOffsetsByTimestamp``,
``startingOffsetsByTimestampStrategy``) are refused by both sources, naming the option to use: they were
ignored, so a Kafka job ported as it was read every message (a batch from an hour ahead returned the whole
topic). So are Kafka's batch pacing options ``minOffsetsPerTrigger`` and ``maxTriggerDelay``, which the
stream ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import StoreReadOptions
from rocketstore.spark.stream_options import SourceOptions, SparkOptionError

pytestmark = pytest.mark.spark

KAFKA_OPTIONS = [("startingOffsetsByTimestamp", '{"TopicA":{"0":1700000000000}}', "startingTimestamp"),
                 ("endingOffsetsByTimestamp", '{"TopicA":{"0":1700000000000}}', "ending"),
                 ("STARTINGOFFSETSBYTIMESTAMPSTRATEGY", "latest", "startingTimestamp")]


@pytest.mark.parametrize(("name", "value", "hint"), KAFKA_OPTIONS)
def test_the_store_source_refuses_them(golden_dir: Path, name: str, value: str, hint: str) -> None:
    with pytest.raises(StoreConfigError, match=f"(?i){name}.*{hint}"):
        StoreReadOptions.parse({"path": str(golden_dir / "stores" / "clean"), name: value})


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize(("name", "value", "hint"), KAFKA_OPTIONS)
def test_the_broker_source_refuses_them(name: str, value: str, hint: str, streaming: bool) -> None:
    with pytest.raises(SparkOptionError, match=f"(?i){name}.*{hint}"):
        SourceOptions.parse({"nameServer": "127.0.0.1:9876", "subscribe": "TopicA", name: value},
                            streaming=streaming)


@pytest.mark.parametrize(("name", "value"), [("minOffsetsPerTrigger", "1000"), ("maxTriggerDelay", "1m")])
def test_the_broker_source_refuses_kafkas_batch_pacing_options(name: str, value: str) -> None:
    """They were ignored: a Kafka job that waited for 1,000 rows per batch ran a batch of each row or two."""
    with pytest.raises(SparkOptionError, match=f"{name}.*processingTime"):
        SourceOptions.parse({"nameServer": "127.0.0.1:9876", "subscribe": "TopicA", name: value},
                            streaming=True)
