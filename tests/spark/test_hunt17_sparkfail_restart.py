"""A ``rocketmq`` stream whose batch fails once and that is restarted from its checkpoint.

Into a foreachBatch (Parquet) sink: no message is lost, and the offsets committed to ``consumerGroup`` never
run ahead of what the sink has (a commit ahead of the failed batch would make ``startingOffsets=group`` skip
its messages).  Into the ``rocketmq`` sink: the replayed batch's messages carry the same UNIQ_KEYs as the
first attempt's, as sink.py promises, so a consumer can drop the duplicates."""

from __future__ import annotations

import sys
import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, pull_all, send_bodies

from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import PropertyName, parse_properties
from rocketstore.remoting.bodies import Perm

pytestmark = pytest.mark.spark


def _run(query: Any) -> Exception | None:
    try:
        query.awaitTermination(120)
    except Exception as exc:  # StreamingQueryException: the failure the test provoked
        return exc
    finally:
        query.stop()
    return None


def test_a_batch_failing_once_loses_nothing_and_commits_no_offset_ahead_of_the_sink(
        spark: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    topic, group = "SparkfailForeach", "sparkfail-foreach"
    cluster.create_topic(topic, 2)
    send_bodies(cluster, topic, [f"m{i}" for i in range(20)])
    failed = tmp_path / "failed"

    def write(df: Any, batch_id: int) -> None:
        if batch_id == 2 and not failed.exists():
            failed.touch()
            raise RuntimeError("batch 2 fails once")
        df.selectExpr("queueId", "queueOffset", "CAST(body AS STRING) AS body").write.mode("append").parquet(
            str(tmp_path / "out"))

    def start() -> Any:
        return (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("subscribe", topic).option("startingOffsets", "earliest")
                .option("consumerGroup", group)
                .option("maxOffsetsPerTrigger", "4").load()
                .writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "ckpt"))
                .trigger(availableNow=True).start())

    def written() -> dict[int, int]:
        """queue id -> one past the highest queue offset the sink has, every offset below it present"""
        rows = spark.read.parquet(str(tmp_path / "out")).collect()
        have: dict[int, set[int]] = defaultdict(set)
        for r in rows:
            have[r["queueId"]].add(r["queueOffset"])
        out = {}
        for qid, offsets in have.items():
            assert offsets == set(range(max(offsets) + 1)), (qid, sorted(offsets))  # a gap-free prefix
            out[qid] = max(offsets) + 1
        return out

    def committed() -> dict[int, int]:
        return cluster.call(lambda: cluster.broker.offsets.offsets(group, topic))

    assert _run(start()) is not None and failed.exists()
    sunk = written()
    assert sum(sunk.values()) == 8  # batches 0 and 1
    assert sum(committed().values()) > 0  # commits are made (the batch before the failed one's end)...
    for qid, offset in committed().items():
        assert offset <= sunk.get(qid, 0), (committed(), sunk)  # ...but never past what the sink has
    assert _run(start()) is None
    sunk = written()
    assert sum(sunk.values()) == 20 and sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out"))
                                               .dropDuplicates(["queueId", "queueOffset"]).collect()) == \
        sorted(f"m{i}" for i in range(20))
    for qid, offset in committed().items():
        assert offset <= sunk[qid], (committed(), sunk)


def test_a_replayed_batch_sends_the_same_uniq_keys_to_the_rocketmq_sink(
        spark: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    source, target, late = "SparkfailSinkIn", "SparkfailSinkOut", "SparkfailSinkLate"
    cluster.create_topic(source, 2)
    cluster.create_topic(target, 1)
    _create(cluster, late, Perm.READ)  # not writable yet: the batch's last row of queue 1 fails its task
    send_bodies(cluster, source, [f"m{i}" for i in range(10)])  # 5 on each queue

    def start() -> Any:
        return (spark.readStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("subscribe", source).option("startingOffsets", "earliest").load()
                .selectExpr("body", f"IF(queueId = 1 AND queueOffset = 4, '{late}', '{target}') AS topic")
                .writeStream.format("rocketmq").option("nameServer", cluster.namesrv_addr)
                .option("batchMessages", "1").option("checkpointLocation", str(tmp_path / "ckpt"))
                .trigger(availableNow=True).start())

    assert _run(start()) is not None
    _create(cluster, late, Perm.READ | Perm.WRITE)
    assert _run(start()) is None
    keys: dict[bytes, set[str]] = defaultdict(set)
    sent = (pull_all(cluster.namesrv_addr, target, expected=13)
            + pull_all(cluster.namesrv_addr, late, expected=1))
    for m in sent:
        keys[m.body].add(parse_properties(m.properties_string)[PropertyName.UNIQ_KEY])
    assert sorted(keys) == sorted(f"m{i}".encode() for i in range(10))
    assert len(sent) >= 14  # queue 1's first four rows went out in the first attempt and again in the replay
    assert all(len(k) == 1 for k in keys.values()), keys  # ...with the same UNIQ_KEYs


def _create(cluster: LocalCluster, topic: str, perm: int) -> None:
    async def create() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.create_topic(topic, broker_addr=cluster.broker_addr, read_queue_nums=1,
                                     write_queue_nums=1, perm=perm)

    asyncio.run(create())
    cluster.wait_until(lambda: (route := cluster.namesrv.routes.route(topic)) is not None
                       and all(q.perm == perm for q in route.queue_datas), 20, f"{topic}'s route")
