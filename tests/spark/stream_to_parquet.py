"""A streaming query from a broker topic into Parquet, run as a subprocess by test_broker_stream_restart.py
(which SIGKILLs its whole process group at random points and starts it again on the same checkpoint).

    python stream_to_parquet.py NAMESRV TOPIC CHECKPOINT OUTPUT [--available-now]

Prints ``STARTED`` once the query runs and ``BATCH <id> <rows>`` after each completed micro-batch; with
``--available-now`` it processes what the topic holds and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("namesrv")
    parser.add_argument("topic")
    parser.add_argument("checkpoint")
    parser.add_argument("output")
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args()

    src = str(Path(__file__).resolve().parents[2] / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    sys.path.insert(0, src)
    from pyspark.sql import SparkSession

    from rocketstore.spark import register

    spark = (SparkSession.builder.master("local[1]").appName("stream-to-parquet")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "512m")
             .config("spark.sql.shuffle.partitions", "1")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    stream = (spark.readStream.format("rocketmq").option("nameServer", args.namesrv)
              .option("subscribe", args.topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "400").load()
              .select("topic", "brokerName", "queueId", "queueOffset", "uniqKey", "keys", "body"))
    writer = (stream.writeStream.format("parquet").option("path", args.output)
              .option("checkpointLocation", args.checkpoint))
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime="500 milliseconds")
    query = writer.start()
    print("STARTED", flush=True)
    seen = -1
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != seen:
            seen = progress["batchId"]
            print(f"BATCH {seen} {progress['numInputRows']} {progress['durationMs']}", flush=True)
        time.sleep(0.1)
    if query.exception() is not None:
        print(f"FAILED {query.exception()}", file=sys.stderr, flush=True)
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
