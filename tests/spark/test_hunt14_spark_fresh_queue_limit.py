"""maxOffsetsPerTrigger and a queue that appears after the query started (a broker that was away when the query
began comes back) whose oldest retained message is past offset 0 (retention deleted the rest): the trigger's
share for that queue starts at the queue's minimum, not at 0, so the next trigger does not start below the
minimum and fail with a data-loss error for messages that were gone before the query ever saw the queue."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql.streaming.datasource import ReadMaxRows

from rocketstore.client import MessageQueue, PullResult, PullStatus
from rocketstore.spark.stream_options import SourceOptions, plan_pull_ranges
from rocketstore.spark.stream_source import BrokerStreamReader, _Planner, source_schema

pytestmark = pytest.mark.spark

LATEST = {"T": {"broker-a:0": 10, "broker-b:0": 2000}}
MINIMUM = {"broker-a:0": 0, "broker-b:0": 1990}


class _Session:
    def min_offset(self, mq: MessageQueue) -> int:
        return MINIMUM[f"{mq.broker_name}:{mq.queue_id}"]

    def pull(self, mq: MessageQueue, offset: int, max_count: int, expression: str) -> PullResult:
        # the one-message pull that marks a queue read (stream_source.MARKS_KEY): nothing to mark here
        key = f"{mq.broker_name}:{mq.queue_id}"
        return PullResult(PullStatus.NO_NEW_MSG, offset, MINIMUM[key], LATEST["T"][key], [])


class _Planner2(_Planner):
    """The broker answers of the scenario, without a broker."""

    def latest(self) -> dict[str, dict[str, int]]:
        return {t: dict(q) for t, q in LATEST.items()}

    @property
    def session(self) -> Any:
        return _Session()


def test_a_new_queue_is_limited_from_its_minimum_offset_not_from_zero() -> None:
    options = SourceOptions.parse({"nameServer": "127.0.0.1:9876", "subscribe": "T", "maxOffsetsPerTrigger": "10"},
                                  streaming=True)
    reader = BrokerStreamReader(options, source_schema())
    reader.planner = _Planner2(options)
    start = {"T": {"broker-a:0": 5}}  # broker-b was not routed when the query started
    end = reader.latestOffset(start, ReadMaxRows(10))
    # 5 messages left on broker-a, 10 on broker-b (1990..1999): at most 10 in all, shared out by backlog
    assert end["T"]["broker-b:0"] >= MINIMUM["broker-b:0"]
    taken = (end["T"]["broker-a:0"] - 5) + (end["T"]["broker-b:0"] - MINIMUM["broker-b:0"])
    assert taken == 10
    # the next trigger goes on from there: every range starts at or past the queue's minimum
    following = reader.latestOffset(end, ReadMaxRows(10))
    for [r] in plan_pull_ranges(end, following, None):
        assert r.start >= MINIMUM[f"{r.broker_name}:{r.queue_id}"], r
