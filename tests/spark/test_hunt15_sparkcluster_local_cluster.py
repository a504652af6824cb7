"""The Spark jobs on a real cluster topology: Spark's ``local-cluster[2,1,1024]`` master, a standalone master
and two workers inside the driver's JVM, each worker starting its own executor JVM with its own Python workers
in its own working directory (SPARK_HOME/work/app-*/N).  Unlike local[*], nothing is shared with the driver
but the file system and the network, as on a cluster of one host.

SLOW ON PURPOSE (marked slow; 70 s measured on 2 cores shared with other jobs, load 6): starting the cluster
alone costs 10-20 s, so one driver subprocess (the script below; the test session's own local[2] SparkContext
owns this process) runs every job once and writes what it saw to a JSON file that the tests check:

* the rocketmq-store source on RocketMQ 4.9.3's golden stores (a cleanly closed one, read through the
  snapshot path, and a killed one, read through recovery), given as paths relative to the driver;
* the rebuild job on a relative store path (executors run elsewhere: the path must reach them absolute);
* a stream from a broker into Parquet with a checkpoint, restarted after more messages arrived;
* a streaming write to a topic: every UNIQ_KEY derives from the query id, which executors read from the
  task's local properties.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.client import Producer
from rocketstore.message.system_topics import is_system_topic
from rocketstore.spark.sink import uniq_key_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GOLDEN = Path("/work/shared/golden")
TOPIC_IN, TOPIC_OUT = "ClusterIn", "ClusterOut"
FIRST, MORE = 120, 30

DRIVER = textwrap.dedent('''
    import asyncio, hashlib, json, os, sys
    from pyspark.sql import SparkSession
    from rocketstore.client import Producer
    from rocketstore.spark import register
    from rocketstore.spark.rebuild import rebuild_with_spark
    from rocketstore.spark.store_options import detect_config

    import time
    namesrv, result_path = sys.argv[1], sys.argv[2]
    out = {}
    t0 = time.monotonic()
    def mark(what):
        print("MARK", what, round(time.monotonic() - t0, 1), flush=True)
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("hunt15-cluster")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
             .config("spark.executor.memory", "512m")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    mark("up")
    out["executor_dirs"] = sorted(set(spark.sparkContext.parallelize(range(4), 4)
                                      .map(lambda _: os.getcwd()).collect()))
    for name in ("clean", "killed"):  # relative paths: resolved where the driver runs
        rows = (spark.read.format("rocketmq-store").option("path", name).option("minPartitions", "2").load()
                .select("topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "body").collect())
        out[name] = sorted([r[0], r[1], r[2], r[3], r[4], hashlib.md5(r[5] or b"").hexdigest()] for r in rows)

    mark("golden")
    config = detect_config("clean").replace(store_path_root_dir="rebuild-me")  # its index and queues are gone
    try:
        report = rebuild_with_spark(spark, "rebuild-me", config, output_dir="rebuilt")
        out["rebuild"] = [report.record_count, report.cq_entry_count]
    except Exception as exc:  # the other jobs still run: one test fails, with this cause
        out["rebuild"] = [line for line in str(exc).splitlines() if "Error" in line][-1:]

    def archive():
        query = (spark.readStream.format("rocketmq").option("nameServer", namesrv).option("subscribe", "@IN@")
                 .option("startingOffsets", "earliest").option("consumerGroup", "cluster-archive").load()
                 .writeStream.format("parquet").option("path", "archive").option("checkpointLocation", "ckpt")
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        if query.exception() is not None:
            raise query.exception()
        return [r[0] for r in spark.read.parquet("archive").select("keys").collect()]

    mark("rebuild")
    out["archive_first"] = archive()
    mark("archive1")

    async def send_more():
        async with Producer(namesrv, "cluster-more") as producer:
            for i in range(@FIRST@, @FIRST@ + @MORE@):
                await producer.send("@IN@", f"m{i}".encode(), keys=f"k{i}")

    asyncio.run(send_more())
    out["archive_restarted"] = archive()
    mark("archive2")

    query = (spark.readStream.format("rocketmq").option("nameServer", namesrv).option("subscribe", "@IN@")
             .option("startingOffsets", "earliest").load().selectExpr("body", "keys")
             .writeStream.format("rocketmq").option("nameServer", namesrv).option("topic", "@OUT@")
             .option("checkpointLocation", "ckpt-sink").trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise query.exception()
    out["sink_query_id"] = str(query.id)
    out["sink_batches"] = max(p["batchId"] for p in query.recentProgress) + 1
    sent = (spark.read.format("rocketmq").option("nameServer", namesrv).option("subscribe", "@OUT@").load()
            .select("keys", "uniqKey").collect())
    out["sink"] = sorted([r[0], r[1]] for r in sent)
    mark("sink")
    spark.stop()
    mark("stop")
    with open(result_path, "w") as f:
        json.dump(out, f)
''').replace("@IN@", TOPIC_IN).replace("@OUT@", TOPIC_OUT).replace("@FIRST@", str(FIRST)).replace(
    "@MORE@", str(MORE))


def _spark_home(directory: Path) -> Path:
    """A SPARK_HOME for the cluster: pyspark's own jars and scripts, so the workers' directories (work/) land
    here and not inside the installed pyspark package."""
    import pyspark

    package = Path(pyspark.__file__).resolve().parent
    directory.mkdir()
    for name in ("bin", "jars", "python"):
        (directory / name).symlink_to(package / name)
    return directory


@pytest.fixture(scope="module")
def seen(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (GOLDEN / "stores" / "clean").is_dir():
        pytest.skip(f"no golden stores under {GOLDEN}")
    work = tmp_path_factory.mktemp("local-cluster")
    for name in ("clean", "killed"):
        shutil.copytree(GOLDEN / "stores" / name, work / name)
    shutil.copytree(GOLDEN / "stores" / "clean", work / "rebuild-me")
    for name in ("consumequeue", "index"):
        shutil.rmtree(work / "rebuild-me" / name)

    async def send() -> None:
        async with Producer(cluster.namesrv_addr, "cluster-first") as producer:
            for i in range(FIRST):
                await producer.send(TOPIC_IN, f"m{i}".encode(), keys=f"k{i}")

    asyncio.run(send())
    import rocketstore

    src = str(Path(rocketstore.__file__).resolve().parents[1])
    env = dict(os.environ, SPARK_HOME=str(_spark_home(work / "spark-home")), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p))
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    (work / "driver.py").write_text(DRIVER, encoding="utf-8")
    result = work / "seen.json"
    log = work / "driver.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "driver.py", cluster.namesrv_addr, str(result)], cwd=work, env=env,
                                stdout=stderr, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=240)  # a deadline for a hung cluster, not a speed limit
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if code != 0 or not result.exists():
        tail = log.read_text(errors="replace")[-6000:]
        pytest.fail(f"the local-cluster driver failed (exit {code}):\n{tail}")
    data: dict[str, Any] = json.loads(result.read_text())
    data["work"] = str(work)
    return data


def _dump(name: str) -> list[list[Any]]:
    import base64
    import hashlib

    dump = json.loads((GOLDEN / "dumps" / f"{name}.json").read_text())
    rows = []
    for t in dump["topics"]:
        if is_system_topic(t["topic"]):  # read only when named in 'topics'
            continue
        for q in t["queues"]:
            for m in q["messages"]:
                rows.append([m["topic"], m["queueId"], m["queueOffset"], m["commitLogOffset"], m["msgId"],
                             hashlib.md5(base64.b64decode(m["bodyBase64"])).hexdigest()])
    return sorted(rows)


def test_executors_run_in_their_own_directories(seen: dict[str, Any]) -> None:
    dirs = seen["executor_dirs"]
    assert len(dirs) == 2 and all("/work/app-" in d for d in dirs), dirs
    assert not any(d == seen["work"] for d in dirs)


@pytest.mark.parametrize("name", ["clean", "killed"])
def test_golden_stores_read_on_executors_as_the_reference_dump(seen: dict[str, Any], name: str) -> None:
    assert seen[name] == _dump(name)


def test_rebuild_of_a_relative_store_path_on_executors_elsewhere(seen: dict[str, Any]) -> None:
    assert seen["rebuild"] == [1629, 1627]
    rebuilt = Path(seen["work"]) / "rebuilt" / "consumequeue"
    reference = GOLDEN / "stores" / "clean" / "consumequeue"
    files = sorted(p.relative_to(reference) for p in reference.rglob("*") if p.is_file())
    assert files and all((rebuilt / f).read_bytes() == (reference / f).read_bytes() for f in files)


def test_stream_with_checkpoint_restarts_where_it_stopped(seen: dict[str, Any]) -> None:
    assert sorted(seen["archive_first"]) == sorted(f"k{i}" for i in range(FIRST))
    assert sorted(seen["archive_restarted"]) == sorted(f"k{i}" for i in range(FIRST + MORE))


def test_stream_sink_keys_come_from_the_query_id_on_executors(seen: dict[str, Any]) -> None:
    sent = seen["sink"]
    assert sorted(k for k, _ in sent) == sorted(f"k{i}" for i in range(FIRST + MORE))
    possible = {uniq_key_for(seen["sink_query_id"], b, p, r)
                for b in range(seen["sink_batches"]) for p in range(8) for r in range(FIRST + MORE)}
    assert {u for _, u in sent} <= possible
    assert len({u for _, u in sent}) == FIRST + MORE
