"""A broker (``rocketstore serve``) killed in the middle of a ``rocketmq`` stream's batch: the batch's pulls
are tried again (fetchOffset.numRetries) and go on once the broker is back on its store, every message read once;
a broker that stays away fails the query with an error naming fetchOffset.numRetries."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from serve_process import ServeProcess, free_port, write_broker_conf

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import NoRouteError

pytestmark = pytest.mark.spark

TOPIC = "SparkfailRestart"


def _prepare(serve: ServeProcess, bodies: list[str]) -> None:
    async def go() -> None:
        async with AdminClient(serve.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, broker_addr=serve.broker_addr, read_queue_nums=2,
                                     write_queue_nums=2)
            for _ in range(200):  # until the name server routes it
                try:
                    await admin.route(TOPIC)
                    break
                except NoRouteError:
                    await asyncio.sleep(0.05)
        async with Producer(serve.namesrv_addr, "sparkfail-producer") as producer:
            for body in bodies:
                await producer.send(TOPIC, body.encode())

    asyncio.run(go())


def _query(spark: Any, serve: ServeProcess, tmp_path: Path, on_batch: Any, retries: int,
           interval_ms: int) -> Any:
    def write(df: Any, batch_id: int) -> None:
        df.count()  # the batch's messages were pulled once...
        on_batch(batch_id)  # ...the broker goes away here...
        # ...and pulled again
        df.selectExpr("CAST(body AS STRING) AS body").write.mode("append").parquet(str(tmp_path / "out"))

    return (spark.readStream.format("rocketmq").option("nameServer", serve.namesrv_addr)
            .option("subscribe", TOPIC).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "10").option("timeoutMs", "2000")
            .option("fetchOffset.numRetries", str(retries))
            .option("fetchOffset.retryIntervalMs", str(interval_ms))
            .load().writeStream.foreachBatch(write).option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True).start())


def test_a_broker_restarted_mid_batch_delays_the_batch_and_loses_nothing(spark: Any, tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    servers = [ServeProcess(tmp_path / "store", conf, **ports).start()]
    bodies = [f"m{i}" for i in range(30)]
    threads: list[threading.Thread] = []
    try:
        _prepare(servers[0], bodies)

        def restart(batch_id: int) -> None:
            if batch_id != 1:
                return
            servers[0].kill()

            def back() -> None:
                time.sleep(2)
                servers.append(ServeProcess(tmp_path / "store", conf, **ports).start())

            threads.append(threading.Thread(target=back, daemon=True))
            threads[0].start()

        query = _query(spark, servers[0], tmp_path, restart, retries=120, interval_ms=250)
        try:
            query.awaitTermination(180)
            assert query.exception() is None, query.exception()
        finally:
            query.stop()
        assert len(servers) == 2  # the broker did go away and come back during batch 1
        got = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == sorted(bodies)
    finally:
        for t in threads:
            t.join(70)
        for s in servers:
            s.kill()


def test_a_broker_that_stays_away_fails_the_query_naming_the_retries(spark: Any, tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    serve = ServeProcess(tmp_path / "store", conf).start()
    try:
        _prepare(serve, [f"m{i}" for i in range(30)])

        def stop(batch_id: int) -> None:
            if batch_id == 1:
                serve.kill()

        query = _query(spark, serve, tmp_path, stop, retries=2, interval_ms=100)
        try:
            with pytest.raises(Exception, match="fetchOffset.numRetries=2"):
                query.awaitTermination(180)
        finally:
            query.stop()
    finally:
        serve.kill()
