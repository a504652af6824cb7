"""broker.conf keys that 4.9.3 reads at every use act when UPDATE_BROKER_CONFIG changes them on a running
broker (``broker-admin config set`` / mqadmin updateBrokerConfig), and the keys that act on nothing here are
named once when the broker starts.

- flushIntervalCommitLog / flushCommitLogLeastPages: 4.9.3's FlushRealTimeService reads them at every round;
  here the flusher kept the values it started with (an hour's interval stayed an hour).
- autoCreateSubscriptionGroup: 4.9.3's findSubscriptionGroupConfig reads it at every call; here the group
  table kept the start value.
- transactionCheckInterval: 4.9.3's check service reads it before each wait; here the service slept the start
  value for ever.
- maxMsgsNumBatch / defaultQueryMaxNum: 4.9.3 reads them at every QUERY_MESSAGE; here the store kept its own.
- osPageCacheBusyTimeOutMills: 4.9.3's isOSPageCacheBusy reads it at every put; here the store kept its own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from serve_process import ServeProcess, write_broker_conf
from test_python_transactions import COMMIT, UNKNOW, arun, checker, eventually, records_of

from rocketstore import Message
from rocketstore.client import PullConsumer, TransactionProducer
from rocketstore.client.errors import SubscriptionError
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run
from rocketstore.store.results import PutMessageStatus

TOPIC = "ConfigKeysTopic"


def _update(cluster: LocalCluster, props: dict[str, str]) -> None:
    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            assert await admin.update_broker_config(props, broker_addr=cluster.broker_addr) == [cluster.broker_addr]

    run(go())


def _admin(cluster: LocalCluster, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await fn(admin)

    return run(go())


def test_flush_interval_and_least_pages_set_at_runtime_act_at_once(tmp_path: Path) -> None:
    hour_ms = 3_600_000
    overrides = {"flush_interval_commit_log_ms": hour_ms, "flush_commit_log_thorough_interval_ms": hour_ms}
    with LocalCluster(tmp_path / "store", store_overrides=overrides) as cluster:
        store = cluster.broker.store
        assert store.put(Message.create(TOPIC, b"not flushed for an hour")).ok
        assert store.flushed_commit_log_offset < store.max_commit_log_offset
        # one small record is under the default 4 pages: both must change for a round to flush it
        _update(cluster, {"flushIntervalCommitLog": "50", "flushCommitLogLeastPages": "0"})
        cluster.wait_until(lambda: store.flushed_commit_log_offset == store.max_commit_log_offset, 10.0,
                           "the commitlog flushed with the new interval and least pages")
        assert store.config.flush_interval_commit_log_ms == 50  # what the store reports follows


def test_auto_create_subscription_group_set_at_runtime_decides_the_next_pull(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", auto_create_subscription_group=False) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert cluster.broker.store.put(Message.create(TOPIC, b"m", queue_id=0)).ok
        cluster.wait_dispatched()

        async def pull(group: str) -> int:
            async with PullConsumer(cluster.namesrv_addr, group) as consumer:
                (mq,) = await consumer.queues(TOPIC)
                return len((await consumer.pull(mq, 0, 32)).messages)

        with pytest.raises(SubscriptionError):
            run(pull("group-before"))
        _update(cluster, {"autoCreateSubscriptionGroup": "true"})
        assert run(pull("group-after")) == 1
        assert "group-after" in cluster.broker.groups.table
        _update(cluster, {"autoCreateSubscriptionGroup": "false"})
        with pytest.raises(SubscriptionError):
            run(pull("group-later"))
        assert run(pull("group-after")) == 1  # a group made meanwhile stays


def test_transaction_check_interval_set_at_runtime_starts_the_checks(tmp_path: Path) -> None:
    topic, group = "ConfigKeysTxTopic", "configkeys-tx"
    asked, check = checker([COMMIT])
    with LocalCluster(tmp_path / "store", transaction_check_interval_ms=3_600_000,
                      transaction_timeout_ms=300) as cluster:
        async def go() -> None:
            async with TransactionProducer(cluster.namesrv_addr, group, check) as producer:
                result = await producer.send_in_transaction(topic, b"settled by a check", lambda m, a: UNKNOW)
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.update_broker_config({"transactionCheckInterval": "200"},
                                                     broker_addr=cluster.broker_addr)
                await eventually(lambda: records_of(cluster, topic, result.msg_id),
                                 "the message committed by a check after the new interval")

        arun(go)
    assert len(asked) >= 1


def test_query_limits_set_at_runtime_cap_the_next_query(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)
        store = cluster.broker.store
        for i in range(5):
            assert store.put(Message.create(TOPIC, f"k{i}".encode(), keys="shared", uniq_key="same-uniq")).ok
        cluster.wait_dispatched()
        assert len(_admin(cluster, lambda a: a.query_by_key(TOPIC, "shared", max_count=32))) == 5
        assert len(_admin(cluster, lambda a: a.query_by_uniq_key(TOPIC, "same-uniq"))) == 5
        _update(cluster, {"maxMsgsNumBatch": "2"})
        assert len(_admin(cluster, lambda a: a.query_by_key(TOPIC, "shared", max_count=32))) == 2
        _update(cluster, {"maxMsgsNumBatch": "64", "defaultQueryMaxNum": "3"})
        assert len(_admin(cluster, lambda a: a.query_by_uniq_key(TOPIC, "same-uniq"))) == 3


def test_the_broker_names_the_start_file_keys_that_act_on_nothing_once(tmp_path: Path) -> None:
    conf = write_broker_conf(tmp_path / "broker.conf", sendMessageThreadPoolNums=4, transientStorePoolEnable="true",
                             enableDLegerCommitLog="false", brokerClustername="misspelt",
                             autoDeleteUnusedStats="true", slaveReadEnable="true")
    serve = ServeProcess(tmp_path / "store", conf)
    with serve:
        pass  # started (it printed its addresses), then stopped
    assert serve.proc is not None and serve.proc.stderr is not None
    lines = [line for line in serve.proc.stderr.read().splitlines() if "act on nothing" in line]
    assert len(lines) == 1, lines
    (line,) = lines
    assert "WARNING" in line
    for name in ("sendMessageThreadPoolNums", "transientStorePoolEnable", "enableDLegerCommitLog"):
        assert name in line
    assert "no broker property (kept as given): brokerClustername" in line
    # keys that act are not named: a property of the broker, and a kept one the broker reads
    assert "slaveReadEnable" not in line and "autoDeleteUnusedStats" not in line


def test_os_page_cache_busy_timeout_set_at_runtime_decides_the_next_put(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        store = cluster.broker.store
        commitlog = store._commitlog
        message = Message.create(TOPIC, b"m")

        def put_while_an_append_holds_the_lock_for(held_ms: int) -> PutMessageStatus:
            """A put while another append has held the commitlog lock for *held_ms*, released soon after."""
            assert commitlog.lock.acquire(timeout=10)
            commitlog.lock_begin_ms = int(time.time() * 1000) - held_ms
            release = threading.Timer(0.3, commitlog.lock.release)
            release.start()
            try:
                return store.put(message).status
            finally:
                release.join()
                commitlog.lock_begin_ms = 0

        # held 5 s: over the default 1000 ms, the put is refused at once
        assert put_while_an_append_holds_the_lock_for(5_000) is PutMessageStatus.OS_PAGECACHE_BUSY
        _update(cluster, {"osPageCacheBusyTimeOutMills": "60000"})
        # within the new timeout: the put waits for the lock and is written
        assert put_while_an_append_holds_the_lock_for(5_000) is PutMessageStatus.PUT_OK
