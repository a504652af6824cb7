"""A streaming ``rocketmq`` query with consumerGroup whose checkpoint holds offsets of a topic that was deleted
since (subscribePattern, or a topic dropped while the query was stopped): the commit of those offsets to the
broker (informational, the checkpoint is what the query resumes from) is skipped with a warning instead of
failing every trigger, and every restart, with "no route for topic"."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.spark.stream_options import SourceOptions
from rocketstore.spark.stream_source import BrokerStreamReader, source_schema

pytestmark = pytest.mark.spark


def test_offsets_of_a_deleted_topic_are_not_committed_and_do_not_fail_the_commit(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        for topic in ("KeptTopic", "DroppedTopic"):
            cluster.create_topic(topic, 1)

        async def send_and_drop() -> None:
            async with Producer(cluster.namesrv_addr, "dropped-producer") as producer:
                for topic in ("KeptTopic", "DroppedTopic"):
                    for i in range(3):
                        await producer.send(topic, f"m{i}".encode())
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.delete_topic("DroppedTopic")

        asyncio.run(send_and_drop())
        options = SourceOptions.parse({"nameServer": cluster.namesrv_addr, "subscribePattern": ".*Topic",
                                       "consumerGroup": "dropped-group", "fetchOffset.numRetries": "0"},
                                      streaming=True)
        reader = BrokerStreamReader(options, source_schema())  # a restarted query: commit() comes first
        try:
            reader.commit({"DroppedTopic": {"broker-a:0": 3}, "KeptTopic": {"broker-a:0": 3}})
        finally:
            reader.stop()
        offsets = cluster.call(lambda: cluster.broker.offsets.offsets("dropped-group", "KeptTopic"))
        assert offsets == {0: 3}
        assert "DroppedTopic broker-a:0" in capfd.readouterr().err
