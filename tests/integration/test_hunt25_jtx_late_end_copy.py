"""A transaction whose local work outlasts transactionTimeOut: the check service copies the half message to
the end of the half queue and asks the producer, who answers UNKNOW (still running); then the local
transaction commits and the producer's END_TRANSACTION names the half message it sent, which the scan has
passed.  The copy is what the next round reaches.

Captured from RocketMQ 4.9.3 (its broker and Java TransactionMQProducer, transactionTimeOut=2000,
transactionCheckInterval=3000, executeLocalTransaction sleeping 7 s, checkLocalTransaction answering UNKNOW
until it returned COMMIT_MESSAGE, then COMMIT_MESSAGE): checks at the copies of queue offsets 139 and 140,
END (commit) for the original at offset 138, then a third check about the copy at 141, answered COMMIT: the
topic got the message twice (queue offsets 0 and 1, preparedTransactionOffset the original's and the
copy's).  Here the copy of a transaction so ended is passed over: no check, committed once.  Rounds are run
by hand (the check interval is an hour); the check service's clock is moved on past transactionTimeOut."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_broker_transactions import TOPIC, Producer, commit_on_check, end_tx, half_send, stored

from rocketstore.broker import transactions as transactions_module
from rocketstore.broker.transactions import HALF_TOPIC, OP_TOPIC
from rocketstore.message.record import SysFlag
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def test_a_copy_of_a_transaction_ended_after_the_scan_passed_it_is_not_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        broker = cluster.broker
        real_ms = transactions_module._now_ms
        ahead_ms = [60_000]  # every round sees the half message older than transactionTimeOut
        monkeypatch.setattr(transactions_module, "_now_ms", lambda: real_ms() + ahead_ms[0])

        def check_round() -> None:
            cluster.wait_dispatched()
            cluster.run(broker.transactions.check())
            cluster.wait_dispatched()

        p = Producer(cluster)  # answers nothing at first: UNKNOW, the local transaction still runs

        async def go() -> None:
            await p.open()
            sent = await p.request(half_send(b"slow", "UNIQ-SLOW", born_ms=int(time.time() * 1000)))
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            await asyncio.to_thread(check_round)  # copied (offset 1) and checked
            for _ in range(100):
                if p.checks:
                    break
                await asyncio.sleep(0.02)
            assert len(p.checks) == 1
            # the local transaction commits: END_TRANSACTION for the half message as sent (offset 0)
            ended = await p.request(end_tx(sent, "UNIQ-SLOW", SysFlag.TRANSACTION_COMMIT_TYPE))
            assert ended.code == ResponseCode.SUCCESS, ended.remark
            p.answer = commit_on_check  # from now on a check of it is answered COMMIT, as it committed
            await asyncio.to_thread(check_round)
            await asyncio.to_thread(check_round)
            await asyncio.sleep(0.1)  # a check sent would be on its way to this connection

        run(go())
        assert [m.body for m in stored(cluster, OP_TOPIC)] == [b"0"]
        assert broker.transactions.checks_sent == 1, "a transaction already committed was checked again"
        assert cluster.call(lambda: broker.store.max_offset(HALF_TOPIC, 0)) == 2, "the ended one copied again"
        assert [m.uniq_key for m in stored(cluster, TOPIC, 1)] == ["UNIQ-SLOW"], "committed once"


def test_transactions_ended_the_usual_way_are_not_noted_as_late(tmp_path: Path) -> None:
    """The bookkeeping costs nothing for the usual commit (found in the session's second review): while a
    young half message holds the op offset back, the op records of ordinarily committed halves behind the
    scan are read again each round; each was looked up in the store and its key noted as ended late (50 of
    50).  Only halves this broker copied for a check are noted now, from what it knew when it copied them."""
    count = 50
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        service = cluster.broker.transactions
        p = Producer(cluster)
        now = int(time.time() * 1000)

        async def go() -> None:
            await p.open()
            old = [(await p.request(half_send(b"x", f"U{k}", born_ms=now - 600_000)), f"U{k}")
                   for k in range(count)]  # old enough to be checked, each committed before any round
            await p.request(half_send(b"y", "UY", born_ms=now))  # young: the scan stops here
            later = await p.request(half_send(b"z", "UZ", born_ms=now))  # beyond the stop
            # the first op record names a half the scan has not reached: the op offset stays there
            await p.request(end_tx(later, "UZ", SysFlag.TRANSACTION_COMMIT_TYPE))
            for answer, uniq in old:
                await p.request(end_tx(answer, uniq, SysFlag.TRANSACTION_COMMIT_TYPE))

        run(go())
        for _ in range(3):
            cluster.wait_dispatched()
            cluster.run(service.check())
            cluster.wait_dispatched()
        assert all(not noted for noted in service._ended_late.values())
        assert service.checks_sent == 0
