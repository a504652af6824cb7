"""END_TRANSACTION's answers as 4.9.3 words them.  The same requests went to the real 4.9.3 broker and to
ours: a rollback that ends its half message is answered SUCCESS with the remark "not set any response code"
(EndTransactionProcessor returns its checks' response, which starts with that remark, after setting only its
code), a commit SUCCESS without a remark (the final put's response clears it).  Ours answered the rollback
without a remark.  Raw frames against a real broker (the helpers of test_broker_transactions)."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within
from test_broker_transactions import Producer, end_tx, half_send

from rocketstore.remoting import RemotingCommand, ResponseCode

TEST_TIMEOUT_S = 60.0

# captured from 4.9.3: (code, remark) of a non-oneway END_TRANSACTION ending a half message
JAVA_ROLLBACK_ANSWER = (0, "not set any response code")
JAVA_COMMIT_ANSWER = (0, None)


def test_a_rollback_is_answered_with_the_remark_4_9_3_leaves_on_it(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[RemotingCommand, RemotingCommand]:
            p = Producer(cluster)
            await p.open()
            try:
                rolled = await p.request(half_send(b"to roll back", "UNIQ-RB"))
                committed = await p.request(half_send(b"to commit", "UNIQ-CM"))
                assert rolled.code == committed.code == ResponseCode.SUCCESS
                return (await p.request(end_tx(rolled, "UNIQ-RB", 12)),
                        await p.request(end_tx(committed, "UNIQ-CM", 8)))
            finally:
                p.conn.close()

        rollback, commit = run_within(go, TEST_TIMEOUT_S)
    assert (rollback.code, rollback.remark) == JAVA_ROLLBACK_ANSWER
    assert (commit.code, commit.remark) == JAVA_COMMIT_ANSWER
