"""Planning of the rocketmq-store source without a SparkSession: options, geometry, ranges, packing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore.errors import StoreConfigError
from rocketstore.spark.store_options import (
    QueueRange,
    StoreReadOptions,
    detect_config,
    is_system_topic,
    pack_in_commit_log_order,
    pack_ranges,
    select_queues,
)

pytestmark = pytest.mark.spark


def test_golden_geometry_is_detected_and_the_odd_sized_index_left_closed(golden_dir: Path) -> None:
    config = detect_config(str(golden_dir / "stores" / "clean"))
    assert config.mapped_file_size_commit_log == 65536
    assert config.mapped_file_size_consume_queue == 6000
    assert config.message_index_enable is False
    explicit = detect_config(str(golden_dir / "stores" / "clean"), {"indexSlots": "100", "indexEntries": "400"})
    assert (explicit.max_hash_slot_num, explicit.max_index_num, explicit.message_index_enable) == (100, 400, True)
    assert explicit.index_file_bytes == 8440


def test_a_consume_queue_file_cut_short_does_not_set_the_consume_queue_size(tmp_path: Path) -> None:
    """The consume-queue size is the most common file size of the first queue (as the store commands
    find it), not the first file's: an interrupted copy that cut the first file short changes nothing."""
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / f"{0:020d}").write_bytes(bytes(4096))
    queue = tmp_path / "consumequeue" / "T" / "0"
    queue.mkdir(parents=True)
    (queue / f"{0:020d}").write_bytes(bytes(1000))  # cut short
    for start in (6000, 12000):
        (queue / f"{start:020d}").write_bytes(bytes(6000))
    assert detect_config(str(tmp_path)).mapped_file_size_consume_queue == 6000


def test_pack_ranges_splits_long_queues_and_shares_partitions_between_small_ones() -> None:
    ranges = [QueueRange("A", 0, 0, 10), QueueRange("A", 1, 5, 7), QueueRange("B", 0, 100, 103)]
    parts = pack_ranges(ranges, 4)
    assert [sum(r.record_count for r in p) for p in parts] == [4, 4, 4, 3]
    assert parts[2] == (QueueRange("A", 0, 8, 10), QueueRange("A", 1, 5, 7))
    assert [r for p in parts for r in p if r.topic == "B"] == [QueueRange("B", 0, 100, 103)]
    assert len(pack_ranges(ranges, 1000, min_partitions=5)) >= 5
    assert len(pack_ranges(ranges, 1000)) == 1
    assert pack_ranges([], 10, 3) == []


def test_commit_log_order_packing_cuts_stretches_of_the_commitlog_into_queue_ranges() -> None:
    # two queues written alternately in runs of 2: A0 A1 B0 B1 A2 A3 B2 B3 ...
    ranges = [QueueRange("A", 0, 0, 6), QueueRange("B", 1, 10, 16)]
    a = np.array([0, 1, 4, 5, 8, 9]) * 100
    b = np.array([2, 3, 6, 7, 10, 11]) * 100
    parts = pack_in_commit_log_order(ranges, [a, b], 5)
    assert parts == [(QueueRange("A", 0, 0, 3), QueueRange("B", 1, 10, 12)),
                     (QueueRange("A", 0, 3, 6), QueueRange("B", 1, 12, 14)),
                     (QueueRange("B", 1, 14, 16),)]
    assert len(parts) == len(pack_ranges(ranges, 5))
    assert len(pack_in_commit_log_order(ranges, [a, b], 1000, min_partitions=4)) == 4
    assert pack_in_commit_log_order([], [], 10) == []
    with pytest.raises(ValueError):
        pack_in_commit_log_order(ranges, [a[:2], b], 5)


def test_system_topics_need_naming() -> None:
    topics = {"TopicA": [0, 1], "SCHEDULE_TOPIC_XXXX": [2], "rmq_sys_x": [0], "%RETRY%g": [0]}
    assert is_system_topic("SCHEDULE_TOPIC_XXXX") and is_system_topic("rmq_sys_x") and not is_system_topic("%RETRY%g")
    base = StoreReadOptions(path="/x", config=detect_config("/nonexistent"))
    assert select_queues(topics, base) == [("%RETRY%g", 0), ("TopicA", 0), ("TopicA", 1)]
    named = StoreReadOptions(path="/x", config=base.config, topics=("SCHEDULE_TOPIC_XXXX", "nope"))
    assert select_queues(topics, named) == [("SCHEDULE_TOPIC_XXXX", 2)]
    pattern = StoreReadOptions(path="/x", config=base.config, topic_pattern="Topic|.*sys.*|SCHEDULE.*")
    assert select_queues(topics, pattern) == []


@pytest.mark.parametrize(("options", "message"), [
    ({}, "needs option 'path'"),
    ({"path": "/nonexistent/store"}, "is not a directory"),
    ({"topics": " , "}, "names no topic"),
    ({"startingOffsets": "[1]"}, "must be a JSON object"),
    ({"startingOffsets": '{"T":{"0":-3}}'}, "integer >= -2"),
    ({"endingOffsets": '{"T":{"x":1}}'}, "is not an integer"),
    ({"startingOffsets": "earliest", "startingTimestamp": "5"}, "either 'startingOffsets' or 'startingTimestamp'"),
    ({"includeBody": "maybe"}, "is not true or false"),
    ({"minPartitions": "0"}, "at least 1"),
    ({"topicPattern": "("}, "not a regular expression"),
    ({"segmentBytes": "-1"}, "must be positive"),
])
def test_bad_options_are_refused(golden_dir: Path, options: dict[str, str], message: str) -> None:
    full = {"path": str(golden_dir / "stores" / "clean"), **options} if "path" not in options and options else options
    with pytest.raises(StoreConfigError, match=message):
        StoreReadOptions.parse(full)


def test_options_are_case_insensitive_and_tags_star_means_all(golden_dir: Path) -> None:
    opts = StoreReadOptions.parse({"PATH": str(golden_dir / "stores" / "clean"), "TOPICPATTERN": "T.*",
                                   "tags": " * ", "IncludeBody": "False"})
    assert opts.topic_pattern == "T.*" and opts.tags is None and opts.include_body is False
    assert StoreReadOptions.parse({"path": opts.path, "tags": "a || b ||"}).tag_set() == {"a", "b"}
