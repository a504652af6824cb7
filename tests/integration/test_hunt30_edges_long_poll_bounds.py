"""Long-polled pulls a client cannot hold forever, nor without bound.

- suspendTimeoutMillis near 2^63-1: 4.9.3's hold service takes now + timeout as the deadline in a long,
  which wraps negative, so the pull's time has run out and it is answered (NO_MESSAGE_IN_QUEUE at its next
  check, captured from 4.9.3: code 19 after <= 5 s).  Here it was parked forever.
- Parked pulls per connection: 4.9.3 holds any number (until its heap runs out); here one costs ~6 KB and a
  client pipelining pulls parked 100,000 (700 MB).  Past the connection's limit a pull is answered at once,
  as one whose suspend time ran out; the parked ones go on waiting, and leave when the connection closes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.serving import RequestServing
from rocketstore.remoting.transport import connect, run
from tests.integration.local_cluster import LocalCluster

TOPIC = "EdgesLongPoll"


def _pull(suspend_ms: int, queue_id: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "edges_lp_group", "topic": TOPIC, "queueId": str(queue_id), "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": str(suspend_ms),
        "subVersion": "0", "expressionType": "TAG", "subscription": "*"})


@pytest.mark.parametrize("suspend_ms", [(1 << 63) - 1, (1 << 63) - 1000])
def test_a_suspend_time_past_the_long_range_is_answered_not_held(tmp_path: Path, suspend_ms: int) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 1)

        async def main() -> RemotingCommand:
            conn = await connect(cluster.broker_addr)
            try:
                return await conn.request(_pull(suspend_ms), 20.0)  # held forever before: timed out here
            finally:
                conn.close()

        answer = run(main())
        assert answer.code == ResponseCode.PULL_NOT_FOUND, (answer.code, answer.remark)
        assert cluster.call(lambda: cluster.broker.pull_hold.waiting_count) == 0


def test_a_connection_parks_at_most_max_parked_pulls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RequestServing, "max_parked", 3)
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, 8)

        async def main() -> list[RemotingCommand]:
            conn = await connect(cluster.broker_addr)
            try:
                pulls = [asyncio.ensure_future(conn.request(_pull(60_000, q), 30.0)) for q in range(5)]
                # the two past the limit are answered at once; the three parked ones wait (60 s)
                answered: list[RemotingCommand] = []
                for future in asyncio.as_completed(pulls, timeout=20.0):
                    answered.append(await future)
                    if len(answered) == 2:
                        break
                await asyncio.to_thread(cluster.wait_until, lambda: cluster.broker.pull_hold.waiting_count == 3,
                                        20.0, "three parked pulls")
                assert sum(p.done() for p in pulls) == 2
                return answered
            finally:
                conn.close()

        answered = run(main())
        assert [a.code for a in answered] == [ResponseCode.PULL_NOT_FOUND] * 2
        # the client went: its parked pulls leave with it
        cluster.wait_until(lambda: cluster.broker.pull_hold.waiting_count == 0, 20.0, "the parked pulls to go")
