"""The rocketmq-store source over stores written by rocketstore: many segments, queues and partitions, and a
store that is being written while it is read."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")
pytest.importorskip("pyarrow", reason="pyspark/pyarrow not installed: pip install 'rocketstore[spark]'")

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.message.hashing import tags_code
from rocketstore.message.host import parse_host

pytestmark = pytest.mark.spark

USER_TOPICS = {"T0", "T1", "T2"}
#: tiny geometry: 64 KiB commitlog segments, 64-entry consume-queue files, 256-entry index files
SMALL = StoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=64 * 20,
                    max_hash_slot_num=64, max_index_num=256)


@pytest.fixture(scope="module")
def written_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("written") / "store"
    rng = random.Random(7)
    hosts = [parse_host("10.1.2.3:4567"), parse_host("[2001:db8::7]:9876")]
    with MessageStore.open(path, SMALL) as store:
        for i in range(4000):
            message = Message.create(
                f"T{i % 3}", rng.randbytes(rng.randrange(0, 300)), tags=rng.choice(["Aa", "BB", "x", None]),
                keys=f"key-{i} k{i % 7}" if i % 3 == 0 else None, uniq_key=f"U{i:08d}" if i % 2 else None,
                properties={"p": str(i)} if i % 5 == 0 else None, queue_id=rng.randrange(8),
                born_timestamp=1_700_000_000_000 + i, born_host=hosts[i % 2], flag=i % 4, reconsume_times=i % 3)
            assert store.put(message).ok
        assert store.put(Message.create("T0", b"later", tags="d", properties={"DELAY": "3"})).ok
        assert store.put(Message.create("rmq_sys_internal", b"sys")).ok
        assert store.wait_dispatched()
    assert len(list((path / "commitlog").iterdir())) >= 8
    return path


def test_many_partitions_read_exactly_what_the_store_holds(written_store, load, rows) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql.functions import spark_partition_id

    df = load(written_store, minPartitions=23, maxRecordsPerPartition=150).withColumn("pid", spark_partition_id())
    table = df.toArrow()
    assert len(set(table.column("pid").to_pylist())) >= 23
    want = rows.direct(written_store, SMALL, USER_TOPICS)
    assert len(want) == 4000
    assert rows.of_table(table) == want


def test_explicit_geometry_options_read_the_same(written_store, load, rows) -> None:  # type: ignore[no-untyped-def]
    got = rows.of_df(load(written_store, topics="T1", segmentBytes=64 * 1024, consumeQueueBytes=64 * 20,
                          indexSlots=64, indexEntries=256))
    assert got == rows.direct(written_store, SMALL, {"T1"})


def test_system_topics_only_when_named(written_store, load, rows) -> None:  # type: ignore[no-untyped-def]
    named = {"SCHEDULE_TOPIC_XXXX", "rmq_sys_internal"}
    got = rows.of_df(load(written_store, topics=",".join(sorted(named))))
    assert got == rows.direct(written_store, SMALL, named)
    assert {r[0] for r in got} == named
    assert not {r[0] for r in rows.of_df(load(written_store, topicPattern=".*"))} & named


def test_tags_filter_drops_hash_collisions(written_store, load, rows) -> None:  # type: ignore[no-untyped-def]
    assert tags_code("Aa") == tags_code("BB")  # Java's String.hashCode collides
    got = rows.of_df(load(written_store, tags="Aa", includeBody=False))
    want = [r for r in rows.direct(written_store, SMALL, USER_TOPICS) if r[6] == "Aa"]
    assert [r[:5] + r[6:] for r in got] == [r[:5] + r[6:] for r in want]
    assert all(r[5] is None for r in got)


def test_partitions_never_read_past_the_planning_snapshot(tmp_path: Path) -> None:
    import pyarrow as pa

    from rocketstore.spark.store_options import StoreReadOptions
    from rocketstore.spark.store_source import StoreReader, store_schema

    path = tmp_path / "store"
    with MessageStore.open(path, SMALL) as store:
        for i in range(300):
            assert store.put(Message.create("S", f"{i}".encode(), queue_id=i % 3)).ok
        assert store.wait_dispatched()
        reader = StoreReader(StoreReadOptions.parse({"path": str(path), "maxRecordsPerPartition": "7"}),
                             store_schema())
        partitions = reader.partitions()
        for i in range(300, 600):
            assert store.put(Message.create("S", f"{i}".encode(), queue_id=i % 3)).ok
        assert store.wait_dispatched()
        table = pa.Table.from_batches([b for p in partitions for b in reader.read(p)])
    assert len(partitions) == 300 // 7 + 1
    assert table.num_rows == 300
    assert sorted(int(b) for b in table.column("body").to_pylist()) == list(range(300))


def test_live_store_reads_a_consistent_prefix_of_every_queue(tmp_path: Path, load, rows) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "live"
    queues = 4
    store = MessageStore.open(path, SMALL)
    written = [0] * queues
    stop = threading.Event()
    problems: list[Any] = []

    def write() -> None:
        i = 0
        # paced and capped: the tiny geometry makes a file per 64 messages, and the writer holds two
        # descriptors per file (its own and the mmap's), so an unpaced writer runs into the fd limit
        while not stop.is_set() and i < 120_000:
            q = i % queues
            result = store.put(Message.create("Live", f"{q}-{written[q]}".encode() * 3, queue_id=q, tags="t"))
            if not result.ok or result.queue_offset != written[q]:
                problems.append(result)
                return
            written[q] += 1
            i += 1
            if i % 10 == 0:
                time.sleep(0.004)  # at most ~2,500 messages/s: leaves CPU for Spark on two cores

    writer = threading.Thread(target=write, name="live-writer", daemon=True)
    writer.start()
    try:
        deadline = time.monotonic() + 30
        while min(store.max_offset("Live", q) for q in range(queues)) < 500:
            assert time.monotonic() < deadline and not problems, "writer made no progress"
            time.sleep(0.01)
        for _ in range(2):
            before = [store.max_offset("Live", q) for q in range(queues)]
            got = rows.of_df(load(path, minPartitions=5))
            after = list(written)
            by_queue: dict[int, list[Any]] = defaultdict(list)
            for r in got:
                by_queue[r[1]].append(r)
            for q in range(queues):
                offsets = [r[2] for r in by_queue[q]]
                assert offsets == list(range(len(offsets))), f"queue {q} is not a prefix"
                assert before[q] <= len(offsets) <= after[q]
                assert all(r[5] == f"{q}-{r[2]}".encode() * 3 for r in by_queue[q])
            assert sum(after) > sum(before), "the store was not written during the read"
        assert not problems
    finally:
        stop.set()
        writer.join()
        store.close()
