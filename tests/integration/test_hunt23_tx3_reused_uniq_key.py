"""Two open transactions that share a UNIQ_KEY: both are checked, and both committed on COMMIT answers.

A Java producer keeps a Message's UNIQ_KEY once set (MessageClientIDSetter.setUniqID sets it only when
absent), so a Message object sent again in a transaction, its body changed, is a second half message with
the first one's key and its own born time.  4.9.3's check service asks about every open half message.
Here the second one was taken for a stale copy of the first (the check service's guard against the copies a
kill -9 leaves behind is keyed by UNIQ_KEY) once the first had been copied for its check: it was passed over
without a copy or a check, the check offset went past it, and it was never committed nor given up: lost.
Rounds are run by hand (the check interval is an hour)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from local_cluster import LocalCluster
from test_broker_transactions import TOPIC, Producer, commit_on_check, half_send, stored

from rocketstore.broker.transactions import HALF_TOPIC
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def test_a_second_transaction_with_the_same_uniq_key_is_checked_and_committed(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        broker = cluster.broker

        def check_round() -> None:
            cluster.wait_dispatched()
            cluster.run(broker.transactions.check())
            cluster.wait_dispatched()

        p = Producer(cluster)
        p.answer = commit_on_check  # both local transactions committed: every check is answered COMMIT

        async def go() -> None:
            await p.open()
            old = int(time.time() * 1000) - 60_000  # old enough to be checked at once
            for body, born in ((b"first order", old), (b"second order", old + 7)):
                sent = await p.request(half_send(body, "UNIQ-REUSED", born_ms=born))
                assert sent.code == ResponseCode.SUCCESS, sent.remark
            await asyncio.to_thread(check_round)
            for _ in range(200):  # the checks' answers (oneway) commit the messages
                if len(stored(cluster, TOPIC, 1)) >= 2:
                    break
                await asyncio.sleep(0.05)
            await asyncio.to_thread(check_round)  # a later round finds both ended

        run(go())
        assert sorted(m.body for m in stored(cluster, TOPIC, 1)) == [b"first order", b"second order"], (
            "the second transaction with the same UNIQ_KEY was never checked")
        assert len(p.checks) == 2
        halves = stored(cluster, HALF_TOPIC)
        assert [m.body for m in halves] == [b"first order", b"second order", b"first order", b"second order"]
