"""The ``rocketmq`` source's ``startingTimestamp`` starts each queue at its first message stored at or after
the timestamp (as Kafka's source and the ``rocketmq-store`` source do), not at the broker's
SEARCH_OFFSET_BY_TIMESTAMP answer: 4.9.3's getOffsetInQueueByTime answers the *nearest* entry, so a
timestamp just after a message started the read at that older message, and one past the queue's last message
read that last message again (a batch read "from an hour from now" returned one old row per queue)."""

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
from local_cluster import LocalCluster

from rocketstore.client.producer import Producer
from rocketstore.message.record import decode_record
from rocketstore.spark.stream_options import SourceOptions

pytestmark = pytest.mark.spark


def _start(cluster: LocalCluster, timestamp_ms: int) -> Any:
    from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

    options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribe": "Stamped",
                                   "startingTimestamp": str(timestamp_ms), "fetchOffset.numRetries": "0"},
                                  streaming=True)
    reader = BrokerStreamReader(options, source_schema())
    try:
        return reader.initialOffset()["Stamped"]
    finally:
        reader.stop()


def test_starting_timestamp_is_the_first_message_stored_at_or_after_it(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("Stamped", 1)

        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "stamped-producer") as producer:
                for i in range(6):
                    await producer.send("Stamped", f"m{i}".encode(), queue_id=0)
                    await asyncio.sleep(0.03)

        asyncio.run(send())
        cluster.wait_dispatched()
        got = cluster.call(lambda: cluster.broker.store.get("Stamped", 0, 0, 32))
        stamps = [decode_record(raw).store_timestamp for raw in got.records]
        assert len(stamps) == 6 and all(a < b for a, b in zip(stamps, stamps[1:])), stamps
        key = f"{cluster.broker_name}:0"
        for i, stamp in enumerate(stamps):
            assert _start(cluster, stamp) == {key: i}
            # just after message i: the nearest entry is message i itself, which was stored before it
            assert _start(cluster, stamp + 1) == {key: i + 1}
        assert _start(cluster, 0) == {key: 0}
        # past every message: nothing to read (the broker answers the last message's offset)
        assert _start(cluster, stamps[-1] + 3_600_000) == {key: 6}
        assert _start(cluster, int(time.time() * 1000) + 3_600_000) == {key: 6}
