"""An executor's pull of a planned range rides out a broker that is away for a moment (a restart while a
micro-batch is read) with the same fetchOffset.numRetries / fetchOffset.retryIntervalMs tries as the driver's
look-ups, instead of failing the task (and, with Spark's local master, the query) at the first refused
connection; a broker that stays away still fails it, naming the tries."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from rocketstore.client import MessageQueue, PullResult, PullStatus
from rocketstore.errors import ConnectionClosedError
from rocketstore.spark.stream_options import PullRange, SourceOptions
from rocketstore.spark.stream_source import _pull_range

pytestmark = pytest.mark.spark


class _FlakySession:
    """Refuses the first *failures* pulls, then answers every pull with an empty FOUND up to the end."""

    def __init__(self, failures: int, end: int) -> None:
        self.failures = failures
        self.end = end
        self.pulls: list[int] = []
        self.expired = 0

    def pull(self, mq: MessageQueue, offset: int, max_count: int, expression: Any) -> PullResult:
        self.pulls.append(offset)
        if self.failures:
            self.failures -= 1
            raise ConnectionClosedError("cannot connect to 127.0.0.1:1: [Errno 111] Connection refused")
        return PullResult(PullStatus.FOUND, min(offset + max_count, self.end), 0, self.end, [])

    def expire_routes(self) -> None:
        self.expired += 1


def _options(retries: int) -> SourceOptions:
    return SourceOptions.parse({"nameServer": "127.0.0.1:9876", "subscribe": "T", "pullBatchSize": "4",
                                "fetchOffset.numRetries": str(retries), "fetchOffset.retryIntervalMs": "1"},
                               streaming=True)


def test_a_pull_refused_for_a_moment_is_tried_again() -> None:
    session = _FlakySession(failures=2, end=8)
    list(_pull_range(session, _options(3), PullRange("T", "broker-a", 0, 0, 8)))  # type: ignore[arg-type]
    assert session.pulls == [0, 0, 0, 4]
    assert session.expired == 2


def test_a_broker_that_stays_away_still_fails_the_read() -> None:
    session = _FlakySession(failures=5, end=8)
    with pytest.raises(ConnectionClosedError) as caught:
        list(_pull_range(session, _options(2), PullRange("T", "broker-a", 0, 0, 8)))  # type: ignore[arg-type]
    assert session.pulls == [0, 0, 0]
    assert "failed 3 times" in "".join(getattr(caught.value, "__notes__", []))
