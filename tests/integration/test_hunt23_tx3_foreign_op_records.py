"""Records in the op topic that the broker did not write (a client may send to RMQ_SYS_TRANS_OP_HALF_TOPIC:
4.9.3 refuses sends to SCHEDULE_TOPIC only) are passed over by the transaction check service.  They named
no half message, were skipped without counting as done, and the op queue's check offset stopped at the
first of them for good: every later round read the op queue again from there and logged it again.
4.9.3 counts a body that is no number (getLong's -1) as done."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster
from serve_process import wait_for
from test_broker_transactions import DEADLINE_S, Producer, end_tx, half_send, stored

from rocketstore.broker.transactions import CHECK_GROUP, OP_TOPIC
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message, SysFlag
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run


def test_foreign_op_records_do_not_stop_the_op_check_offset(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        broker = cluster.broker
        now = int(time.time() * 1000)
        for tags, body in (("d", b"not a number"), ("x", b"0")):  # a bad body, a tag that is not the op's
            put = cluster.call(lambda tags=tags, body=body: broker.store.put(
                Message(OP_TOPIC, body, {PropertyName.TAGS: tags}, 0, 0, 0, now)))
            assert put.ok

        async def go() -> None:
            p = Producer(cluster)
            await p.open()
            answer = await p.request(half_send(b"committed", "UNIQ-F"))
            ended = await p.request(end_tx(answer, "UNIQ-F", SysFlag.TRANSACTION_COMMIT_TYPE))
            assert ended.code == ResponseCode.SUCCESS, ended.remark

        run(go())
        wait_for(lambda: len(stored(cluster, OP_TOPIC)) == 3, DEADLINE_S, "the commit's op record")
        for _ in range(2):  # the first round passes the half message, the second its op record
            cluster.wait_dispatched()
            cluster.run(broker.transactions.check())
        assert cluster.call(lambda: broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0)) == 3, (
            "the op check offset stopped at a record the broker did not write")
