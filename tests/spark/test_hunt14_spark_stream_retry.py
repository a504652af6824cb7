"""The streaming ``rocketmq`` source rides out a broker that is briefly unreachable: the offset and route
look-ups of a trigger are retried (options fetchOffset.numRetries / fetchOffset.retryIntervalMs, as Spark's
Kafka source) instead of failing the query at the first refused connection."""

from __future__ import annotations

import asyncio
import sys
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
from rocketstore.spark.stream_options import SourceOptions, SparkOptionError

pytestmark = pytest.mark.spark

TOPIC = "RetriedTrigger"


def _send(namesrv: str, bodies: list[str]) -> None:
    async def go() -> None:
        async with Producer(namesrv, "retry-producer") as producer:
            for body in bodies:
                await producer.send(TOPIC, body.encode())

    asyncio.run(go())


def _create_topic(serve: ServeProcess) -> None:
    async def go() -> None:
        async with AdminClient(serve.namesrv_addr) as admin:
            await admin.create_topic(TOPIC, broker_addr=serve.broker_addr, read_queue_nums=2, write_queue_nums=2)
            for _ in range(200):  # until the name server routes it
                try:
                    await admin.route(TOPIC)
                    return
                except NoRouteError:
                    await asyncio.sleep(0.05)

    asyncio.run(go())


def _wait(what: str, fn: Any, query: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not fn():
        if query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


#: Spark's own limit, not the source's: a new Python worker (the stream's source runner) must connect back to the JVM
#: within 10 s (PythonWorkerFactory), which a CPU-starved CI machine can miss before the query reads anything
SPARK_WORKER_LATE = "Python worker failed to connect back"


def _started(start: Any, timeout_s: float = 120.0) -> Any:
    """``start()`` (a streaming query) once its first trigger is done; started again (twice at most) when Spark
    could not start the query's Python worker in time, before the query read anything."""
    for attempt in range(3):
        query = start()
        deadline = time.monotonic() + timeout_s
        while query.lastProgress is None and query.exception() is None:
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for the query's first trigger")
            time.sleep(0.1)
        problem = query.exception()
        if problem is None:
            return query
        query.stop()
        if SPARK_WORKER_LATE not in str(problem) or attempt == 2:
            raise AssertionError(f"the query failed at its start: {problem}")
    raise AssertionError("unreachable")


def test_retry_options_have_defaults_and_are_checked() -> None:
    base = {"nameServer": "127.0.0.1:9876", "subscribe": "T"}
    opts = SourceOptions.parse(base, streaming=True)
    # Kafka's numbers; a name server or broker that cannot be reached is waited for a minute (reconnectTimeoutMs)
    assert (opts.fetch_retries, opts.fetch_retry_interval_s, opts.reconnect_timeout_s) == (3, 0.01, 60.0)
    opts = SourceOptions.parse({**base, "fetchOffset.numRetries": "0", "fetchOffset.retryIntervalMs": "10"},
                               streaming=True)
    # numRetries alone bounds an outage by its tries, as before reconnectTimeoutMs
    assert (opts.fetch_retries, opts.fetch_retry_interval_s, opts.reconnect_timeout_s) == (0, 0.01, 0.0)
    opts = SourceOptions.parse({**base, "fetchOffset.numRetries": "0", "reconnectTimeoutMs": "2500"},
                               streaming=True)
    assert (opts.fetch_retries, opts.reconnect_timeout_s) == (0, 2.5)
    with pytest.raises(SparkOptionError, match="reconnectTimeoutMs must be at least 0"):
        SourceOptions.parse({**base, "reconnectTimeoutMs": "-1"}, streaming=True)
    with pytest.raises(SparkOptionError, match="fetchOffset.numRetries must be at least 0"):
        SourceOptions.parse({**base, "fetchOffset.numRetries": "-1"}, streaming=True)
    with pytest.raises(SparkOptionError, match=r"fetchOffset.retryIntervalMs='soon' is not an integer"):
        SourceOptions.parse({**base, "fetchOffset.retryIntervalMs": "soon"}, streaming=True)


def test_a_retry_asks_the_name_server_again_for_a_broker_that_moved(tmp_path: Path) -> None:
    from rocketstore.spark.stream_source import _Planner

    conf = write_broker_conf(tmp_path / "broker.conf")
    namesrv_port = free_port()
    serve = ServeProcess(tmp_path / "store", conf, namesrv_port=namesrv_port, broker_port=free_port()).start()
    planner = None
    try:
        _create_topic(serve)
        _send(serve.namesrv_addr, [f"m{i}" for i in range(4)])
        options = SourceOptions.parse({"nameServer": serve.namesrv_addr, "subscribe": TOPIC,
                                       "fetchOffset.numRetries": "3", "fetchOffset.retryIntervalMs": "100"},
                                      streaming=True)
        planner = _Planner(options)
        # the four sends are acknowledged before the broker's dispatch puts them in their queues: wait for
        # the queue ends to count them, or "before" can miss some (seen: a queue at 0 here and 2 after restart)
        before = planner.latest()
        for _ in range(200):
            if sum(sum(queues.values()) for queues in before.values()) == 4:
                break
            time.sleep(0.05)
            before = planner.latest()
        serve.kill()
        # the broker comes back on another port (a new container, say); the route the planner cached still
        # names the old one for its 30 s lifetime
        serve = ServeProcess(tmp_path / "store", conf, namesrv_port=namesrv_port, broker_port=free_port()).start()
        assert planner.retrying("looking up the latest offsets", planner.latest) == before
    finally:
        if planner is not None:
            planner.close()
        serve.kill()


def test_a_broker_restarted_between_triggers_does_not_fail_the_query(spark: Any, tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf")
    ports = {"namesrv_port": free_port(), "broker_port": free_port()}
    serve = ServeProcess(tmp_path / "store", conf, **ports).start()
    query = None
    try:
        _create_topic(serve)
        _send(serve.namesrv_addr, [f"before{i}" for i in range(6)])
        stream = (spark.readStream.format("rocketmq").option("nameServer", serve.namesrv_addr)
                  .option("subscribe", TOPIC).option("startingOffsets", "earliest").option("timeoutMs", "2000")
                  # up to a minute of retries: a restarted `rocketstore serve` needs a few seconds
                  .option("fetchOffset.numRetries", "120").option("fetchOffset.retryIntervalMs", "500").load())
        query = _started(lambda: stream.selectExpr("CAST(body AS STRING) AS body").writeStream.format("memory")
                         .queryName("hunt14_retried").trigger(processingTime="200 milliseconds").start())

        def count() -> int:
            return int(spark.table("hunt14_retried").count())

        _wait("the first messages", lambda: count() == 6, query)
        serve.kill()  # name server and broker gone at once, as a crash leaves them
        # let the next triggers run into the outage (a trigger every 200 ms while nothing is new)
        time.sleep(1.5)
        assert query.exception() is None, query.exception()
        serve = ServeProcess(tmp_path / "store", conf, **ports).start()
        _send(serve.namesrv_addr, [f"after{i}" for i in range(6)])
        _wait("the messages sent after the restart", lambda: count() == 12, query)
        got = sorted(r["body"] for r in spark.table("hunt14_retried").collect())
        assert got == sorted([f"before{i}" for i in range(6)] + [f"after{i}" for i in range(6)])
        assert query.isActive
    finally:
        if query is not None:
            query.stop()
        serve.kill()
