"""The transaction check's reads of the half and op topics are counted in the broker's figures, as 4.9.3's
TransactionalMessageBridge counts them: GROUP_GET_NUMS / GROUP_GET_SIZE under CID_RMQ_SYS_TRANS (statsAll's
RMQ_SYS_TRANS_HALF_TOPIC / CID_RMQ_SYS_TRANS row), BROKER_GET_NUMS, and the store's found / missed gets
(getFoundTps, getMissTps, getTransferedTps, msgGetTotalTodayNow).  Ours counted none of them: statsAll's
row read OutTPS 0.00 and OutMsg24Hour 0 where 4.9.3's showed the check's reads."""

from __future__ import annotations

import time
from pathlib import Path

from local_cluster import LocalCluster
from serve_process import wait_for
from test_broker_transactions import DEADLINE_S, Producer, end_tx, half_send, stored

from rocketstore.broker.broker_stats import BROKER_GET_NUMS, GROUP_GET_NUMS, GROUP_GET_SIZE
from rocketstore.broker.transactions import CHECK_GROUP, HALF_TOPIC, OP_TOPIC
from rocketstore.message.record import SysFlag
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.transport import run

# captured from 4.9.3 (`mqadmin statsAll`, a producer sending transactional messages that it ends at once,
# one check round in the minute): the check group's row counts the half message the round read
JAVA_STATS_ALL_ROW = ("RMQ_SYS_TRANS_HALF_TOPIC", "CID_RMQ_SYS_TRANS", "0", "0.88", "0.02", "53", "1")


def test_the_transaction_check_reads_count_as_gets_of_its_group(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000) as cluster:
        broker = cluster.broker

        async def go() -> None:
            p = Producer(cluster)
            await p.open()
            answer = await p.request(half_send(b"committed", "UNIQ-C", queue_id=0))
            ended = await p.request(end_tx(answer, "UNIQ-C", SysFlag.TRANSACTION_COMMIT_TYPE))
            assert ended.code == ResponseCode.SUCCESS, ended.remark
            # left open, and too young to be asked about: the round reads it and stops there
            await p.request(half_send(b"open", "UNIQ-O", queue_id=0, born_ms=int(time.time() * 1000)))

        run(go())
        wait_for(lambda: len(stored(cluster, OP_TOPIC)) == 1, DEADLINE_S, "the commit's op record")
        cluster.wait_dispatched()
        store_stats = broker.stats.store

        def gets() -> tuple[int, int, int]:
            return store_stats.get_found_count, store_stats.get_miss_count, store_stats.get_transferred_count

        found_before, missed_before, got_before = cluster.call(gets)
        cluster.run(broker.transactions.check())

        def item_value(name: str, key: str) -> int | None:
            item = cluster.call(lambda: broker.stats.item(name, key))
            return None if item is None else item.value

        half_key, op_key = f"{HALF_TOPIC}@{CHECK_GROUP}", f"{OP_TOPIC}@{CHECK_GROUP}"
        assert item_value(GROUP_GET_NUMS, half_key) == 1, "the open half message the round read"
        assert item_value(GROUP_GET_NUMS, op_key) == 1, "the op record the round read"
        half_bytes = item_value(GROUP_GET_SIZE, half_key)
        assert half_bytes is not None and half_bytes > 0
        assert item_value(BROKER_GET_NUMS, broker.config.broker_cluster_name) == 2
        found, missed, got = cluster.call(gets)
        assert (found - found_before, got - got_before) == (2, 2)
        assert missed > missed_before, "the op queue read past its end is a missed get"
