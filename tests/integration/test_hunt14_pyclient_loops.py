"""A client is loop-bound, and a user calling ``asyncio.run(producer.send(...))`` once per message gives it a
new event loop every time.  Its connections from a loop that has closed are then reopened on the new
loop, so every such send is answered; a connection of a loop still running elsewhere (another thread)
is refused at once with an error that says so.  (Both used to write the request on the old loop's
socket and wait for an answer that loop would never read: the message was stored, the send raised
RequestTimeoutError after timeout_s, and a retry by the user stored it twice.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster, stored_messages, wait_stored

from rocketstore.client import Producer
from rocketstore.errors import RemotingError

TOPIC = "Hunt14LoopTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_a_producer_sends_from_one_asyncio_run_to_the_next(cluster: LocalCluster) -> None:
    producer = Producer(cluster.namesrv_addr, "hunt14-loop-pg", timeout_s=2.0)
    try:
        statuses = [asyncio.run(asyncio.wait_for(producer.send(TOPIC, b"m%d" % i), 30)).status for i in range(3)]
    finally:
        asyncio.run(producer.close())
    assert statuses == ["SEND_OK"] * 3
    assert sorted(m.body for m in wait_stored(cluster, TOPIC, 3, "each message once", queues=2)) == [
        b"m0", b"m1", b"m2"]


def test_a_producer_used_from_a_second_running_loop_is_refused_at_once(cluster: LocalCluster) -> None:
    producer = Producer(cluster.namesrv_addr, "hunt14-loop-pg", timeout_s=2.0)
    first = cluster.run(producer.send(TOPIC, b"from the first loop"))  # the cluster's loop, running in its thread
    assert first.status == "SEND_OK"
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            asyncio.run(asyncio.wait_for(producer.send(TOPIC, b"from another loop"), 30))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(60)
    cluster.run(producer.close())
    assert len(errors) == 1 and isinstance(errors[0], RemotingError), errors
    assert "another event loop" in str(errors[0])
    cluster.wait_dispatched()
    assert [m.body for m in stored_messages(cluster, TOPIC, 2)] == [b"from the first loop"]
