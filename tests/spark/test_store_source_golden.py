"""The rocketmq-store source over the golden RocketMQ 4.9.3 stores yields exactly their reference dumps.

Geometry is auto-detected from the files (65536-byte commitlog segments, 6000-byte consume-queue files; the
index files have no default size, so the index stays closed).  Offsets, timestamps and tag filtering are
checked against the same dumps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyarrow", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

pytestmark = pytest.mark.spark

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


def _store(golden_dir: Path, name: str) -> Path:
    return golden_dir / "stores" / name


def test_golden_store_reads_as_its_dump_without_system_topics(golden_store, golden_dir, golden_dump, load,
                                                             rows) -> None:  # type: ignore[no-untyped-def]
    dump = golden_dump(golden_store)
    user_topics = {t["topic"] for t in dump["topics"]} - {SCHEDULE_TOPIC}
    got = rows.of_df(load(_store(golden_dir, golden_store)))
    want = rows.of_dump(dump, user_topics)
    assert len(got) == len(want)
    assert got == want


def test_golden_store_named_topics_include_schedule_topic(golden_store, golden_dir, golden_dump, load,
                                                         rows) -> None:  # type: ignore[no-untyped-def]
    dump = golden_dump(golden_store)
    every = {t["topic"] for t in dump["topics"]}
    got = rows.of_df(load(_store(golden_dir, golden_store), topics=",".join(sorted(every)), minPartitions=3))
    want = rows.of_dump(dump)
    assert got == want
    assert any(r[0] == SCHEDULE_TOPIC for r in got) == any(r[0] == SCHEDULE_TOPIC for r in want)


def test_starting_and_ending_offsets_per_queue(golden_dir, golden_dump, load, rows) -> None:  # type: ignore[no-untyped-def]
    got = rows.of_df(load(_store(golden_dir, "clean"), topics="TopicA,TopicB",
                          startingOffsets={"TopicA": {"0": 5, "1": -2, "2": 25}, "TopicB": {"3": 28}},
                          endingOffsets={"TopicA": {"0": 10, "1": 100000, "3": 0}, "TopicB": {"0": 2}}))
    # (-1 in startingOffsets and -2 in endingOffsets are refused in a batch read, as Kafka's source refuses them:
    # tests/spark/test_hunt20_sparkoffsets_json_markers.py)
    bounds = {("TopicA", 0): (5, 10), ("TopicA", 1): (0, 25), ("TopicA", 2): (25, 25), ("TopicA", 3): (0, 0),
              ("TopicB", 0): (0, 2), ("TopicB", 1): (0, 30), ("TopicB", 2): (0, 30), ("TopicB", 3): (28, 30)}
    want = [r for r in rows.of_dump(golden_dump("clean"), {"TopicA", "TopicB"})
            if bounds[(r[0], r[1])][0] <= r[2] < bounds[(r[0], r[1])][1]]
    assert got == want
    assert len(got) == 5 + 25 + 2 + 30 + 30 + 2


def test_earliest_latest_keywords(golden_dir, load) -> None:  # type: ignore[no-untyped-def]
    path = _store(golden_dir, "clean")
    with pytest.raises(Exception, match="startingOffsets=latest would read nothing"):
        load(path, topics="TopicA", startingOffsets="latest").toArrow()
    with pytest.raises(Exception, match="endingOffsets=earliest would read nothing"):
        load(path, topics="TopicA", endingOffsets="earliest").toArrow()
    assert load(path, topics="TopicA", startingOffsets="earliest", endingOffsets="latest").toArrow().num_rows == 100


def test_timestamps_select_store_time_range(golden_dir, golden_dump, load, rows) -> None:  # type: ignore[no-untyped-def]
    dump_all = rows.of_dump(golden_dump("clean"), {"HotTopic", "TopicB"})
    times = sorted({r[11] for r in dump_all})
    start, end = times[len(times) // 4], times[3 * len(times) // 4]
    got = rows.of_df(load(_store(golden_dir, "clean"), topics="HotTopic,TopicB", startingTimestamp=start,
                          endingTimestamp=end, minPartitions=4))
    want = [r for r in dump_all if start <= r[11] < end]
    assert got == want
    assert 0 < len(got) < len(dump_all)
    only_start = rows.of_df(load(_store(golden_dir, "clean"), topics="HotTopic", startingTimestamp=end))
    assert only_start == [r for r in dump_all if r[0] == "HotTopic" and r[11] >= end]


def test_tags_expression_filters_by_exact_tag(golden_dir, golden_dump, load, rows) -> None:  # type: ignore[no-untyped-def]
    dump = golden_dump("clean")
    got = rows.of_df(load(_store(golden_dir, "clean"), tags="hot0 || hot2 || TagB || tag-ü"))
    want = [r for r in rows.of_dump(dump, {t["topic"] for t in dump["topics"]} - {SCHEDULE_TOPIC})
            if r[6] in {"hot0", "hot2", "TagB", "tag-ü"}]
    assert got == want
    assert {r[6] for r in got} == {"hot0", "hot2", "TagB", "tag-ü"}
    # a tag expression on the schedule topic matches tags (its tags codes are delivery times, not hashes)
    delayed = rows.of_df(load(_store(golden_dir, "clean"), topics=SCHEDULE_TOPIC, tags="delayed"))
    assert delayed == rows.of_dump(dump, {SCHEDULE_TOPIC})


def test_include_body_false_gives_null_bodies(golden_dir, load) -> None:  # type: ignore[no-untyped-def]
    table = load(_store(golden_dir, "clean"), topics="TopicA", includeBody=False).toArrow()
    assert table.num_rows == 100
    assert table.column("body").null_count == 100
    assert table.column("msgId").null_count == 0


def test_topic_pattern_matches_whole_names_and_skips_system_topics(golden_dir, load) -> None:  # type: ignore[no-untyped-def]
    table = load(_store(golden_dir, "clean"), topicPattern="Topic[AB]|SCHEDULE.*").toArrow()
    assert set(table.column("topic").to_pylist()) == {"TopicA", "TopicB"}


def test_user_schema_picks_columns(golden_dir, golden_dump, load, rows) -> None:  # type: ignore[no-untyped-def]
    table = load(_store(golden_dir, "clean"), schema="queueOffset long, topic string, queueId int",
                 topics="TopicV6").toArrow()
    assert table.column_names == ["queueOffset", "topic", "queueId"]
    want = [(r[2], r[0], r[1]) for r in rows.of_dump(golden_dump("clean"), {"TopicV6"})]
    assert sorted(zip(*(table.column(n).to_pylist() for n in table.column_names))) == sorted(want)


def test_bad_options_fail_with_a_clear_message(golden_dir, load) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match="either 'topics' or 'topicPattern'"):
        load(_store(golden_dir, "clean"), topics="TopicA", topicPattern="Topic.*").toArrow()
    with pytest.raises(Exception, match="not one of the rocketmq-store columns"):
        load(_store(golden_dir, "clean"), schema="nope string").toArrow()
