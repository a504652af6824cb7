"""When the check service gives a half message up (TRANS_CHECK_MAX_TIME_TOPIC), as 4.9.3's
TransactionalMessageServiceImpl.needDiscard / needSkip: a half message without TRANSACTION_CHECK_TIMES is
always checked once (its count becomes 1, whatever transactionCheckMax says); a count is compared with
transactionCheckMax, else raised; and only then is a message born before the store's fileReservedTime given
up, its copy carrying the raised count.  Raw frames against a real broker (test_broker_transactions'
helpers); check rounds every 200 ms.  No durations asserted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from local_cluster import LocalCluster
from serve_process import wait_for
from test_broker_transactions import DEADLINE_S, FAST_CHECKS, TOPIC, Producer, half_send, stored

from rocketstore.broker.transactions import CHECK_MAX_TIME_TOPIC
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import StoredMessage
from rocketstore.remoting import ResponseCode
from rocketstore.remoting.headers import CheckTransactionStateRequestHeader
from rocketstore.remoting.transport import run

HOUR_MS = 3600 * 1000


def _given_up(cluster: LocalCluster, p: Producer, uniq: str, born_ms: int) -> StoredMessage:
    async def go() -> StoredMessage:
        await p.open()
        sent = await p.request(half_send(b"given up", uniq, born_ms=born_ms))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        [dead] = await asyncio.to_thread(wait_for, lambda: stored(cluster, CHECK_MAX_TIME_TOPIC),
                                         DEADLINE_S, "the half message given up")
        p.conn.close()
        return dead

    return run(go())


def test_a_half_message_older_than_the_files_are_kept_is_given_up_with_its_count_raised(
        tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        p = Producer(cluster)
        reserved_ms = cluster.broker.store.config.file_reserved_time_h * HOUR_MS
        dead = _given_up(cluster, p, "UNIQ-OLD", int(time.time() * 1000) - reserved_ms - HOUR_MS)
        assert p.checks == [], "given up without a check"
        assert dead.body == b"given up" and dead.properties[PropertyName.REAL_TOPIC] == TOPIC
        assert dead.properties.get(PropertyName.TRANSACTION_CHECK_TIMES) == "1"
        assert all(stored(cluster, TOPIC, q) == [] for q in range(4))


def test_a_check_max_of_zero_still_checks_a_half_message_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", transaction_check_max=0, **FAST_CHECKS) as cluster:
        p = Producer(cluster)  # never answers a check
        dead = _given_up(cluster, p, "UNIQ-ZERO", int(time.time() * 1000) - 60_000)
        assert len(p.checks) == 1, "checked once, then given up on the next round"
        asked = CheckTransactionStateRequestHeader.from_ext_fields(p.checks[0].ext_fields)
        assert asked.msg_id == "UNIQ-ZERO"
        assert dead.body == b"given up" and dead.properties.get(PropertyName.TRANSACTION_CHECK_TIMES) == "1"
