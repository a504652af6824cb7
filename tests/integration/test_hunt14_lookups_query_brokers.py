"""``rocketstore message query -k KEY --max N`` against a topic spread over two master brokers: each broker's
index answers the newest N messages with the key (4.9.3's IndexService walks newest file and entry first),
so the N the command keeps must be the newest of all, not the oldest of what the brokers happened to send."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster

from rocketstore.broker import Broker
from rocketstore.message.record import Message

TOPIC = "LookTwoBrokers"
KEY = "shared-key"
BASE_MS = 1_700_000_000_000
#: store times (seconds after BASE_MS) of the messages with KEY on each broker
TIMES = {"broker-a": (1, 3, 5), "broker-b": (2, 4, 6)}


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Broker]]:
    root: Path = tmp_path_factory.mktemp("lookups-two-brokers")
    with LocalCluster(root / "store-a") as cluster:
        broker_b = cluster.start_broker(root / "store-b")
        try:
            cluster.create_topic_on(TOPIC, [cluster.broker_addr, broker_b.address])
            for broker in (cluster.broker, broker_b):
                for second in TIMES[broker.config.broker_name]:
                    message = Message.create(TOPIC, f"at {second}".encode(), keys=f"{KEY} k{second}",
                                             store_timestamp=BASE_MS + second * 1000)
                    cluster.call(lambda b=broker, m=message: b.store.put(m))  # type: ignore[misc]
                assert broker.store.wait_dispatched(10)
            yield cluster, broker_b
        finally:
            cluster.run(broker_b.close())


def _seconds(found: list[dict[str, Any]]) -> list[int]:
    return [(m["storeTimestamp"] - BASE_MS) // 1000 for m in found]


def test_query_by_key_with_max_keeps_the_newest_messages_of_all_brokers(
        two_brokers: tuple[LocalCluster, Broker], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = two_brokers
    everything = ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY)
    assert _seconds(everything) == [1, 2, 3, 4, 5, 6]
    # each broker answers its two newest (3, 5 and 4, 6): the two newest of all are 5 and 6
    newest = ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY, "--max", "2")
    assert _seconds(newest) == [5, 6]
    one = ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY, "--max", "1")
    assert _seconds(one) == [6]


def test_query_by_key_in_a_time_window_across_brokers(two_brokers: tuple[LocalCluster, Broker],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cluster, _ = two_brokers
    window = ("--begin", str(BASE_MS + 2000), "--end", str(BASE_MS + 4000))
    assert _seconds(ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", KEY, *window)) == [2, 3, 4]
    assert _seconds(ok_json(capsys, cluster, "message", "query", "-t", TOPIC, "-k", "k5")) == [5]
