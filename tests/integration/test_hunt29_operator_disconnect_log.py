"""A consumer whose connection closes is one INFO line in the broker's log naming its address and groups
(4.9.3 logs the channel close and the consumer's unregistration in broker.log); a producer's close is
none (every CLI send closes one).

Found running `rocketstore broker -v` as an operator: a consumer process killed in the middle of its work left
no trace in the broker's log, although its group's queues moved to the others right then."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_bad_input import RawConnection

from rocketstore.remoting import RequestCode
from rocketstore.remoting.bodies import ConsumerData, HeartbeatData, build_subscription

GROUP = "hunt29-op-group"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def _closed_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "connection" in r.getMessage() and "closed" in r.getMessage()
            and r.name == "rocketstore.broker.broker"]


def test_a_consumers_close_is_logged_and_a_producers_is_not(cluster: LocalCluster,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rocketstore.broker.broker")
    producer, consumer = RawConnection(cluster.broker_addr), RawConnection(cluster.broker_addr)
    try:
        body = HeartbeatData("10.0.0.9@p", ("hunt29-op-producers",), ()).encode()
        assert producer.request(RequestCode.HEART_BEAT, body=body).code == 0
        sub = build_subscription("OpTopic", "*", 1)
        body = HeartbeatData("10.0.0.8@c", (), (ConsumerData(GROUP, subscriptions=(sub,)),)).encode()
        assert consumer.request(RequestCode.HEART_BEAT, body=body).code == 0
        producer.close()
        consumer.close()
        deadline = time.monotonic() + 10
        while not _closed_lines(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # (the producer's close, had it been logged, came first)
        [line] = _closed_lines(caplog)
        assert line.levelno == logging.INFO and GROUP in line.getMessage()
        assert line.getMessage().startswith("consumer connection 127.0.0.1:")
    finally:
        producer.close()
        consumer.close()


def test_the_first_registration_with_a_name_server_is_logged(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # found alongside: `broker -v` said nothing at start about reaching its name servers (4.9.3 logs each
    # registration); one INFO line the first time and after a failure, not one every 30 s
    caplog.set_level(logging.INFO, logger="rocketstore.broker.registration")
    with LocalCluster(tmp_path / "store2") as c:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not [
                r for r in caplog.records if r.getMessage().startswith("registered with name server")]:
            time.sleep(0.05)
        lines = [r for r in caplog.records if r.getMessage().startswith("registered with name server")]
        assert len(lines) == 1 and c.namesrv_addr in lines[0].getMessage()
