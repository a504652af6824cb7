"""The transaction check service's memory of the copies it made (``_copied``: half queue offset -> the
transaction's key, for an END_TRANSACTION that names a copy the scan has passed) under producer churn.

Found by a churn run (session 26, jleak): Java transactional producers in new groups, each leaving a half
message answered UNKNOW and going away, against a long-running broker.  Every check round copies each open
half message once, and the entry of every copy stayed until the 100,000-per-queue bound pushed it out, also
for transactions long over: given up after transactionCheckMax checks, or answered UNKNOW and then committed
from a later copy (the END names that copy; the entries of the earlier ones stayed).  The table grew ~50
entries a minute at the churn's rate and never shrank.  4.9.3 has no such table (it checks a copy of a
transaction ended late again).  Now an entry goes once its transaction has no copy ahead of the scan: what
is left is bounded by the open transactions.  Rounds are run by hand; half messages are born in the past,
so each round finds them old enough.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from local_cluster import LocalCluster
from test_broker_transactions import CHECK_MAX_TIME_TOPIC, Producer, commit_on_check, half_send, stored

from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def _copied(cluster: LocalCluster) -> int:
    return cluster.call(lambda: sum(len(c) for c in cluster.broker.transactions._copied.values()))


def _round(cluster: LocalCluster) -> None:
    cluster.wait_dispatched()
    cluster.run(cluster.broker.transactions.check())
    cluster.wait_dispatched()


def test_copies_of_transactions_given_up_or_ended_are_forgotten(tmp_path: Path) -> None:
    count, check_max = 20, 3
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000,
                      transaction_check_max=check_max) as cluster:
        p = Producer(cluster)  # answers nothing: every transaction stays UNKNOW, as a producer gone away
        old = int(time.time() * 1000) - 600_000

        async def go() -> tuple[int, int, int]:
            await p.open()
            for k in range(count):
                sent = await p.request(half_send(b"x", f"U{k}", born_ms=old))
                assert sent.code == ResponseCode.SUCCESS, sent.remark
            await asyncio.sleep(0.01)  # stored before the round starts (the round stops at its own writes)
            for _ in range(check_max + 2):
                await asyncio.to_thread(_round, cluster)
            given_up = len(await asyncio.to_thread(stored, cluster, CHECK_MAX_TIME_TOPIC))
            after_given_up = await asyncio.to_thread(_copied, cluster)
            # answered UNKNOW once, then COMMIT from the next copy: the first copy's entry goes too
            for k in range(count):
                sent = await p.request(half_send(b"y", f"V{k}", born_ms=old))
                assert sent.code == ResponseCode.SUCCESS, sent.remark
            await asyncio.sleep(0.01)
            await asyncio.to_thread(_round, cluster)  # copied and checked: nobody answers
            p.answer = commit_on_check
            for _ in range(3):
                await asyncio.to_thread(_round, cluster)
                await asyncio.sleep(0.05)  # the checks' END_TRANSACTIONs arrive
            return given_up, after_given_up, await asyncio.to_thread(_copied, cluster)

        given_up, after_given_up, after_commit = run(go())
        assert given_up == count, "every transaction given up"
        assert after_given_up == 0, "copies of transactions given up are still remembered"
        assert len(p.checks) >= 2 * count
        assert after_commit == 0, "copies of committed transactions are still remembered"
