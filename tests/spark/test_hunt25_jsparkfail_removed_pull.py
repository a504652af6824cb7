"""Retention deleting the commitlog records a stream's queue range points at before the queue's min offset has
moved past them (4.9.3 corrects consume queues in a later step of its clean-up, a queue after another): the
broker's pull steps over the entries of the deleted segment and answers with the messages after them (FOUND),
or, when every entry it scanned was deleted, PULL_RETRY_IMMEDIATELY with the remark MESSAGE_WAS_REMOVING and a
next offset past them, which the client calls NO_MATCHED_MSG as for a filtered pull.  The source used to step
over the gap silently.  It is data loss: failOnDataLoss fails the batch naming the offsets, failOnDataLoss=false skips
them with a warning (as it skips offsets retention has already cut off the queue)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.client import MessageQueue, PullConsumer, PullResult, PullStatus
from rocketstore.spark.broker_io import BrokerSession
from rocketstore.spark.stream_options import PullRange, SourceOptions
from rocketstore.spark.stream_source import DataLossError, _pull_range

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from local_cluster import LocalCluster, send_bodies

pytestmark = pytest.mark.spark

TOPIC = "Hunt25Removed"


def _options(name_server: str, **extra: str) -> SourceOptions:
    return SourceOptions.parse({"nameServer": name_server, "subscribe": TOPIC, "fetchOffset.numRetries": "0",
                                **extra}, streaming=True)


class _Session:
    """A broker whose queue entries 0..5 point at deleted records (the answer 4.9.3 gives then)."""

    def pull(self, mq: MessageQueue, offset: int, max_count: int, expression: str) -> PullResult:
        if offset < 6:
            return PullResult(PullStatus.NO_MATCHED_MSG, 6, 0, 10, [], (), "MESSAGE_WAS_REMOVING")
        return PullResult(PullStatus.NO_MATCHED_MSG, 10, 0, 10, [], (), "NO_MATCHED_MESSAGE")  # filtered out


def test_removed_records_are_data_loss_not_filtered_messages(capsys: pytest.CaptureFixture[str]) -> None:
    r = PullRange(TOPIC, "broker-a", 0, 0, 10)
    session: Any = _Session()
    with pytest.raises(DataLossError, match=r"queue offsets \[0, 6\) are gone from the broker \(MESSAGE_WAS_REMOV"):
        list(_pull_range(session, _options("127.0.0.1:9876"), r))
    assert list(_pull_range(session, _options("127.0.0.1:9876", failOnDataLoss="false"), r)) == []
    assert "skipping lost messages" in capsys.readouterr().err
    # a queue new to the query starts at whatever it still has: no loss
    assert list(_pull_range(session, _options("127.0.0.1:9876"), r._replace(fresh=True))) == []


def test_a_filtered_pull_answering_past_its_offset_is_no_loss() -> None:
    class Filtered:
        def pull(self, mq: MessageQueue, offset: int, max_count: int, expression: str) -> PullResult:
            found: Any = SimpleNamespace(queue_offset=6)  # entries 0..5 hold other tags
            return PullResult(PullStatus.FOUND, 7, 0, 7, [found], (), "FOUND")

    session: Any = Filtered()
    got = list(_pull_range(session, _options("127.0.0.1:9876", tags="A"), PullRange(TOPIC, "broker-a", 0, 0, 7)))
    assert [[m.queue_offset for m in ms] for ms in got] == [[6]]


def test_a_pull_into_a_deleted_segment_fails_the_range(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides={"mapped_file_size_commit_log": 64 << 10}) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        send_bodies(cluster, TOPIC, ["x" * 1000 + str(i) for i in range(150)])  # about 3 segments
        cluster.wait_dispatched()
        store = cluster.broker.store
        cluster.call(lambda: store._commitlog.files.delete_first(1))  # the consume queue is not corrected yet
        mq = MessageQueue(TOPIC, cluster.broker_name, 0)

        async def pull() -> PullResult:
            async with PullConsumer(cluster.namesrv_addr, "hunt25-removed") as consumer:
                return await consumer.pull(mq, 0, 32)

        got = cluster.run(pull())  # as 4.9.3's pull: the deleted segment's entries stepped over, no error
        first = got.messages[0].queue_offset
        assert got.status == PullStatus.FOUND and got.min_offset == 0 and first > 0
        with BrokerSession(cluster.namesrv_addr, "hunt25-removed") as session:
            with pytest.raises(DataLossError, match=rf"queue offsets \[0, {first}\) are gone"):
                list(_pull_range(session, _options(cluster.namesrv_addr), PullRange(TOPIC, cluster.broker_name,
                                                                                     0, 0, 150)))
            rows = [m.queue_offset for ms in _pull_range(session, _options(cluster.namesrv_addr,
                                                                           failOnDataLoss="false"),
                                                         PullRange(TOPIC, cluster.broker_name, 0, 0, 150))
                    for m in ms]
        assert rows == list(range(first, 150))  # the rest of the queue, from past the gap
