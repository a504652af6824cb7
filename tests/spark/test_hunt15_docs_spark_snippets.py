"""docs/spark.md's two Python blocks, run as written: the ``rocketmq-store`` read on a store directory (its
path pointed at one written here), then the ``rocketmq`` stream and sink on a running broker (the name
server's address and the /data/ paths pointed at this test's).  The sink block writes a ``df`` the page leaves
to the reader; here it is the plainest one with an ``id`` and a ``payload``: ``spark.range`` (``id`` a long)."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, pull_all, run_within

from rocketstore import Message, MessageStore, StoreConfig
from rocketstore.client import Producer

pytestmark = pytest.mark.spark

SPARK_MD = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


def python_blocks() -> list[str]:
    return [part[:part.index("```")] for part in SPARK_MD.read_text(encoding="utf-8").split("```python\n")[1:]]


def run_block(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    exec(compile(code, "<docs/spark.md block>", "exec"), namespace)  # noqa: S102 - the page's own text
    return namespace


def test_the_store_block_reads_the_store(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = python_blocks()[0]
    store_dir = tmp_path / "store"
    with MessageStore.open(store_dir, StoreConfig(mapped_file_size_commit_log=1 << 20,
                                                  preallocate_commit_log=False)) as store:
        for i in range(30):
            store.put(Message.create("TopicA", f"a{i}".encode(), tags=("TagA", "TagB", "TagC")[i % 3],
                                     queue_id=i % 2))
        store.put(Message.create("TopicB", b"b", tags="TagB"))
    assert "/data/rocketmq/store" in block
    run_block(block.replace("/data/rocketmq/store", str(store_dir)), {"__name__": "spark_block"})
    shown = capsys.readouterr().out
    counts = {(m[1], m[2]): int(m[3]) for m in re.finditer(r"\|\s*(\w+)\|\s*(\w+)\|\s*(\d+)\|", shown)}
    # TopicA queue 0 starts at 23 (its 15 messages: from 23 clamped to its end, nothing), queue 1 at its
    # start: 15 messages, TagA / TagB / TagC in turn, TagC filtered out; TopicB: all of it
    assert counts == {("TopicA", "TagA"): 5, ("TopicA", "TagB"): 5, ("TopicB", "TagB"): 1}, shown


def test_the_broker_block_archives_and_sends(spark: Any, cluster: LocalCluster, tmp_path: Path) -> None:
    block = python_blocks()[1]
    cluster.create_topic("TopicA", 2)
    sent = [f"archived {i}".encode() for i in range(4)]

    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "docs-spark-producer") as producer:
            for body in sent:
                await producer.send("TopicA", body)

    run_within(send, 20.0)
    assert "127.0.0.1:9876" in block and "/data/" in block
    code = block.replace("127.0.0.1:9876", cluster.namesrv_addr).replace("/data/", f"{tmp_path}/")
    df = spark.range(3).selectExpr("id", "concat('payload ', id) AS payload")
    try:
        namespace = run_block(code, {"spark": spark, "df": df, "__name__": "spark_block"})
        query = namespace["query"]
        assert query.awaitTermination(120) is not False
        assert query.exception() is None
    finally:
        for active in spark.streams.active:  # a failed block leaves its stream running
            active.stop()
    archived = {bytes(r["body"]) for r in spark.read.parquet(str(tmp_path / "archive")).collect()}
    assert archived == set(sent)
    deadline = time.monotonic() + 20.0
    while len(got := pull_all(cluster.namesrv_addr, "TopicB", "docs-spark-check")) < 3:
        assert time.monotonic() < deadline, got
        time.sleep(0.1)
    assert sorted((m.body, m.tags, m.keys) for m in got) == [
        (f"payload {i}".encode(), "TagA", str(i)) for i in range(3)]
