"""END_TRANSACTION's header checks as 4.9.3's: EndTransactionRequestHeader.checkFields refuses a
commitOrRollback other than 0, 8 or 12 while the header is read, which NettyRemotingAbstract answers
SYSTEM_ERROR (a oneway one: no answer); the half message stays open and can still be ended.  Raw frames
against a real broker (the helpers of test_broker_transactions)."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within
from test_broker_transactions import TOPIC, Producer, end_tx, half_send, stored

from rocketstore.broker.transactions import OP_TOPIC
from rocketstore.remoting import RemotingCommand, ResponseCode
from rocketstore.remoting.codes import RequestCode

TEST_TIMEOUT_S = 60.0


def test_a_commit_or_rollback_of_another_number_is_answered_system_error(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:  # no check rounds during this test
        async def go() -> tuple[list[RemotingCommand], RemotingCommand, RemotingCommand]:
            p = Producer(cluster)
            await p.open()
            sent = await p.request(half_send(b"tx-body", "UNIQ-WRONG"))
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            answers = [await p.request(end_tx(sent, "UNIQ-WRONG", kind)) for kind in (9, 4, -1)]
            # a oneway one goes unanswered; the connection still serves what follows
            await p.conn.oneway(end_tx(sent, "UNIQ-WRONG", 9, oneway=True))
            ping = await p.request(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}))
            committed = await p.request(end_tx(sent, "UNIQ-WRONG", 8))
            p.conn.close()
            return answers, ping, committed

        answers, ping, committed = run_within(go, TEST_TIMEOUT_S)
        for answer in answers:
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert answer.remark is not None
            assert "commitOrRollback" in answer.remark and "field wrong" in answer.remark
        assert ping.code == ResponseCode.SUCCESS
        assert committed.code == ResponseCode.SUCCESS, committed.remark
        cluster.wait_dispatched()
        assert [m.body for m in stored(cluster, TOPIC, 1)] == [b"tx-body"], "committed once, after refusals"
        assert len(stored(cluster, OP_TOPIC, 0)) == 1
