"""The message of a CHECK_TRANSACTION_STATE says WAIT=false, as 4.9.3's does.

4.9.3 writes the half message's copy from the same properties map it then encodes into the check, and
marks that copy WAIT=false after serialising the copy's properties: the check's message carries
WAIT=false.  Captured from a 4.9.3 broker checking a Java 4.9.3 client's UNKNOW transaction (UNIQ_KEY
left out): CLUSTER=DefaultCluster, KEYS=tk, PGROUP=tpg-jprod, REAL_QID=0, REAL_TOPIC=T1_tx, TAGS=TX,
TRANSACTION_CHECK_TIMES=1, TRAN_MSG=true, WAIT=false."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster
from test_python_transactions import COMMIT, FAST_CHECKS, UNKNOW, arun, checker, eventually, records_of

from rocketstore.client import TransactionProducer
from rocketstore.message.record import StoredMessage


def test_the_checked_message_says_wait_false(tmp_path: Path) -> None:
    topic, group = "TxWaitTopic", "tx-wait"
    asked, check = checker([COMMIT])
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> None:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"tx", lambda m, a: UNKNOW, tags="TX", keys="tk")
                await eventually(lambda: records_of(cluster, topic, result.msg_id), "the committed message")

        arun(go)
    props = asked[0].properties
    assert props["WAIT"] == "false"
    assert props["TRANSACTION_CHECK_TIMES"] == "1" and props["REAL_TOPIC"] == topic and props["TRAN_MSG"] == "true"


def test_an_immune_half_message_copied_back_says_wait_false_and_so_does_its_commit(tmp_path: Path) -> None:
    # 4.9.3 re-serialises the immune copy's properties after marking it WAIT=false: a 4.9.3 push consumer saw
    # the message committed by the check with CHECK_IMMUNITY_TIME_IN_SECONDS=6, TRAN_PREPARED_QUEUE_OFFSET=79,
    # TRANSACTION_CHECK_TIMES=3, WAIT=false (captured from a 4.9.3 broker and Java client)
    topic, group = "TxImmuneWaitTopic", "tx-immune-wait"
    asked, check = checker([COMMIT])
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> list[StoredMessage]:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(
                    topic, b"immune", lambda m, a: UNKNOW, tags="TX",
                    properties={"CHECK_IMMUNITY_TIME_IN_SECONDS": "1"})
                return await eventually(lambda: records_of(cluster, topic, result.msg_id), "the committed message")

        [final] = arun(go)
    assert final.properties["WAIT"] == "false"
    assert "TRAN_PREPARED_QUEUE_OFFSET" in final.properties
    assert asked[0].properties["WAIT"] == "false"
