"""Sends to a real broker that stops reading its producer's connection for a while (a stalled process: the
socket buffers fill), then reads again.

- A oneway send that raises was not sent: 4.9.3's invokeOnewayImpl throws only when it could not hand the
  request to the channel, so a caller may send it again without a duplicate.  Ours used to queue the frame
  first and then time out waiting for the peer to read, raising for a message the broker stored later.
- A request that times out waiting for the peer to read leaves no "Future exception was never retrieved"
  behind (the response timer and the drain share the time-out; the timer's error was never retrieved).

Outcomes only: no durations asserted.
"""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Any

from local_cluster import LocalCluster, run_within, stored_messages, wait_stored

from rocketstore.client import Producer
from rocketstore.errors import RemotingError

TEST_TIMEOUT_S = 120.0
#: random (so incompressible) bodies, large enough that the socket buffers fill within a few sends
BODY_BYTES = 1 << 20
MAX_SENDS = 64


def _set_reading(cluster: LocalCluster, reading: bool) -> None:
    """Pause (or resume) reading on every connection the broker serves, on the broker's loop."""
    def flip() -> None:
        for connection in cluster.broker.server.connections:
            transport = connection._transport
            assert transport is not None
            if reading:
                transport.resume_reading()  # type: ignore[attr-defined]
            else:
                transport.pause_reading()  # type: ignore[attr-defined]

    cluster.call(flip)


async def _oneways_until_one_fails(producer: Producer, topic: str) -> int:
    """Oneway sends until one raises (the broker reads nothing meanwhile); how many returned."""
    for sent in range(MAX_SENDS):
        try:
            await producer.send_oneway(topic, os.urandom(BODY_BYTES))
        except RemotingError:
            return sent
    raise AssertionError(f"{MAX_SENDS} oneway sends to a broker that reads nothing all returned")


def test_a_oneway_send_that_raises_on_a_stalled_broker_was_not_sent(tmp_path: Path) -> None:
    topic = "Hunt23StalledOneway"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)

        async def go() -> int:
            async with Producer(cluster.namesrv_addr, "hunt23-stalled-oneway", timeout_s=1.0) as producer:
                await producer.send(topic, b"first")  # the connection is open now
                await asyncio.to_thread(_set_reading, cluster, False)
                try:
                    returned = await _oneways_until_one_fails(producer, topic)
                finally:
                    await asyncio.to_thread(_set_reading, cluster, True)
                # after every frame queued before it on the one connection
                await producer.send(topic, b"marker", timeout_s=30.0)
                return returned

        returned = run_within(go, TEST_TIMEOUT_S)
        cluster.wait_dispatched()
        # the first, each oneway that returned, the marker: not the oneway that raised
        wait_stored(cluster, topic, returned + 2, "the sends that returned", queues=1)
        cluster.wait_dispatched()
        assert len(stored_messages(cluster, topic, queues=1)) == returned + 2


def test_a_request_timing_out_on_a_stalled_broker_leaves_no_unretrieved_future_error(tmp_path: Path) -> None:
    topic = "Hunt23StalledRequest"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        unhandled: list[dict[str, Any]] = []

        async def go() -> None:
            asyncio.get_running_loop().set_exception_handler(lambda loop, context: unhandled.append(context))
            async with Producer(cluster.namesrv_addr, "hunt23-stalled-request", timeout_s=1.0,
                                retry_times=0) as producer:
                await producer.send(topic, b"first")
                await asyncio.to_thread(_set_reading, cluster, False)
                try:
                    await _oneways_until_one_fails(producer, topic)  # the socket buffers are full now
                    try:
                        await producer.send(topic, b"waits for the broker to read")
                    except RemotingError:
                        pass
                    else:
                        raise AssertionError("a send to a broker that reads nothing returned")
                    gc.collect()
                    await asyncio.sleep(0)
                finally:
                    await asyncio.to_thread(_set_reading, cluster, True)

        run_within(go, TEST_TIMEOUT_S)
        never_retrieved = [c for c in unhandled if "never retrieved" in str(c.get("message"))]
        assert never_retrieved == [], never_retrieved
