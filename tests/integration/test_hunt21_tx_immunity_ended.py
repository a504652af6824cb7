"""A half message with CHECK_IMMUNITY_TIME_IN_SECONDS whose transaction ended after a check round had
passed it over (written again at the end of the half queue, remembering its first queue offset in
TRAN_PREPARED_QUEUE_OFFSET), when the next round reaches that copy after the immunity ran out.

4.9.3 consults TRAN_PREPARED_QUEUE_OFFSET only while the immunity lasts; past it the copy was checked like
any open half message although the op record naming its first offset had just been read: the producer,
whose transaction committed, answers COMMIT and the message is written to its topic a second time.  Rounds
are run by hand (the check interval is an hour); the check service's clock is moved on past the immunity."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_broker_transactions import TOPIC, Producer, commit_on_check, end_tx, half_send, stored

from rocketstore.broker import transactions as transactions_module
from rocketstore.broker.transactions import HALF_TOPIC, OP_TOPIC
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import SysFlag
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def test_a_copy_of_an_immune_half_message_ended_meanwhile_is_not_checked_after_its_immunity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        broker = cluster.broker
        real_ms = transactions_module._now_ms
        ahead_ms = [1000]  # first round a second on: the half message stored before it began, still immune
        monkeypatch.setattr(transactions_module, "_now_ms", lambda: real_ms() + ahead_ms[0])

        def check_round() -> None:
            cluster.wait_dispatched()
            cluster.run(broker.transactions.check())
            cluster.wait_dispatched()

        p = Producer(cluster)
        p.answer = commit_on_check  # its transaction committed: every check of it is answered COMMIT

        async def go() -> None:
            await p.open()
            sent = await p.request(half_send(b"immune", "UNIQ-IMMUNE-END", born_ms=int(time.time() * 1000),
                                             extra={PropertyName.CHECK_IMMUNITY_TIME_IN_SECONDS: "10"}))
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            # a round while the local transaction runs: the immune half message is passed over (copied)
            await asyncio.to_thread(check_round)
            assert cluster.call(lambda: broker.store.max_offset(HALF_TOPIC, 0)) == 2
            ended = await p.request(end_tx(sent, "UNIQ-IMMUNE-END", SysFlag.TRANSACTION_COMMIT_TYPE))
            assert ended.code == ResponseCode.SUCCESS, ended.remark
            # the next round, a minute on: the immunity has run out when it reaches the copy
            ahead_ms[0] = 60_000
            await asyncio.to_thread(check_round)
            await asyncio.sleep(0)  # a check sent would be on its way to this connection

        run(go())
        assert [m.body for m in stored(cluster, OP_TOPIC)] == [b"0"]
        assert broker.transactions.checks_sent == 0, "a transaction already committed was checked"
        assert cluster.call(lambda: broker.store.max_offset(HALF_TOPIC, 0)) == 2, "the ended one copied again"
        assert [m.uniq_key for m in stored(cluster, TOPIC, 1)] == ["UNIQ-IMMUNE-END"], "committed once"
