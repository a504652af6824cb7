"""brokerRole changed at run time by UPDATE_BROKER_CONFIG, and the schedule service around it.

4.9.3's Configuration.update sets MessageStoreConfig.brokerRole on the running broker, and its store reads it
at every put (DefaultMessageStore.checkStoreStatus: a SLAVE refuses with SERVICE_NOT_AVAILABLE; CommitLog's
handleHA: a SYNC_MASTER waits for a slave), so a send sees the new role at once.  What starts with the broker
(HA, slave sync, delayed delivery, transaction checks) stays as it started: the schedule service of a master
made slave keeps trying its deliveries, every DELAY_FOR_A_WHILE (100 ms) after a failed put, so it goes on
as soon as the broker is a master again.  A slave's store loads delayOffset.json too and GET_ALL_DELAY_OFFSET
answers that table (AdminBrokerProcessor.getAllDelayOffset), never SYSTEM_ERROR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, start_slave, stop

from rocketstore import Message
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import BrokerError
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import connect, run
from rocketstore.store.config import BrokerRole
from rocketstore.store.results import PutMessageStatus

TOPIC = "RoleTopic"


def set_role(cluster: LocalCluster, role: str, broker_addr: str | None = None) -> None:
    async def go() -> list[str]:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await admin.update_broker_config({"brokerRole": role},
                                                    broker_addr=broker_addr or cluster.broker_addr)

    assert run(go()) == [broker_addr or cluster.broker_addr]


def send(cluster: LocalCluster, body: bytes, **kw: Any) -> Any:
    async def go() -> Any:
        async with Producer(cluster.namesrv_addr, "role-producer") as producer:
            return await producer.send(TOPIC, body, queue_id=0, **kw)

    return run(go())


def ask(addr: str, code: int) -> RemotingCommand:
    async def go() -> RemotingCommand:
        conn = await connect(addr)
        try:
            return await conn.request(RemotingCommand.request(code, {}), 10)
        finally:
            conn.close()

    return run(go())


def test_a_master_made_slave_refuses_sends_at_once_and_takes_them_again_made_master(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert send(cluster, b"first").status == "SEND_OK"
        set_role(cluster, "SLAVE")
        with pytest.raises(BrokerError) as refused:
            send(cluster, b"refused by the slave store")
        assert refused.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "messages are put to the slave" in (refused.value.remark or "")
        cluster.wait_dispatched()  # "first" in its consume queue (built a moment after the send), and no more
        assert cluster.broker.store.max_offset(TOPIC, 0) == 1
        set_role(cluster, "ASYNC_MASTER")
        second = send(cluster, b"second")
        assert second.status == "SEND_OK" and second.queue_offset == 1
        cluster.wait_dispatched()
        got = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, 0, 32).messages)
        assert [m.body for m in got] == [b"first", b"second"]
        # recorded for the next start too
        assert "brokerRole=ASYNC_MASTER" in (tmp_path / "store" / "config" / "broker.properties").read_text()


def test_an_async_master_made_sync_master_answers_for_its_missing_slave_at_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", ha_listen_port=0) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert send(cluster, b"async").status == "SEND_OK"
        set_role(cluster, "SYNC_MASTER")
        assert send(cluster, b"no slave to wait for").status == "SLAVE_NOT_AVAILABLE"
        set_role(cluster, "ASYNC_MASTER")
        assert send(cluster, b"async again").status == "SEND_OK"
        cluster.broker.store.wait_dispatched()  # the consume queue is built after the answer (reput)
        assert cluster.broker.store.max_offset(TOPIC, 0) == 3


def test_a_slave_made_master_goes_on_from_the_replicated_queue_offsets(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            for i in range(3):
                assert send(cluster, b"replicated %d" % i).status == "SEND_OK"
            caught_up(cluster, slave)
            own = Message.create(TOPIC, b"own", queue_id=0)
            assert cluster.call(lambda: slave.store.put(own)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
            set_role(cluster, "ASYNC_MASTER", slave.address)
            # its store had no queue offsets of its own (4.9.3's stays at what it recovered at start, 0):
            # the next one follows the three replicated
            put = cluster.call(lambda: slave.store.put(own))
            assert put.status is PutMessageStatus.PUT_OK and put.queue_offset == 3
            slave.store.wait_dispatched()
            got = cluster.call(lambda: slave.store.get(TOPIC, 0, 0, 32).messages)
            assert [m.body for m in got] == [b"replicated 0", b"replicated 1", b"replicated 2", b"own"]
        finally:
            stop(cluster, slave)


def test_a_failed_delivery_is_tried_again_after_a_while_not_a_period(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", store_overrides={"message_delay_level": "1s"}) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        schedule = cluster.broker.schedule
        assert schedule is not None and schedule.started
        assert send(cluster, b"delayed", properties={"DELAY": "1"}).status == "SEND_OK"
        set_role(cluster, "SLAVE")  # the store refuses the delivery put when it falls due
        cluster.wait_until(lambda: schedule._failing.get(1) is PutMessageStatus.SERVICE_NOT_AVAILABLE, 10,
                           "the delivery refused by the slave store")
        assert cluster.broker.store.max_offset(TOPIC, 0) == 0 and schedule.offsets.get(1, 0) == 0
        set_role(cluster, "ASYNC_MASTER")
        # 100 ms later, not 10 s later (DELAY_FOR_A_PERIOD follows only an exception in 4.9.3)
        cluster.wait_until(lambda: schedule.offsets.get(1) == 1, 5, "the delivery tried again")
        cluster.wait_dispatched()
        got = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, 0, 32).messages)
        assert [m.body for m in got] == [b"delayed"]


def test_a_slave_answers_the_delay_offsets_it_loaded(tmp_path: Path) -> None:
    levels = {**STORE, "message_delay_level": "1s 2s"}
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=levels) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert send(cluster, b"delayed", properties={"DELAY": "1"}).status == "SEND_OK"
        schedule = cluster.broker.schedule
        assert schedule is not None
        cluster.wait_until(lambda: schedule.offsets.get(1) == 1, 10, "the delivery on the master")
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            # started with no delayOffset.json: its table is empty, answered as 4.9.3 answers it
            answer = ask(slave.address, RequestCode.GET_ALL_DELAY_OFFSET)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            assert answer.body == b'{"offsetTable":{}}'
            assert slave.schedule is not None and not slave.schedule.started
            synced = tmp_path / "slave" / "config" / "delayOffset.json"
            cluster.wait_until(lambda: synced.exists() and slave.slave_sync is not None
                               and slave.slave_sync.rounds, 20, "the slave sync")
            caught_up(cluster, slave)
        finally:
            stop(cluster, slave)
        # the slave's close keeps the synced file (4.9.3's slave never persists its table)
        assert synced.read_text() == '{"offsetTable":{1:1}}'
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            answer = ask(slave.address, RequestCode.GET_ALL_DELAY_OFFSET)
            assert answer.code == ResponseCode.SUCCESS and answer.body == b'{"offsetTable":{1:1}}'
        finally:
            stop(cluster, slave)


def test_the_role_set_at_start_still_decides_what_starts(tmp_path: Path) -> None:
    # the schedule service of a broker started as slave never starts, whatever role it is given later
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            set_role(cluster, "ASYNC_MASTER", slave.address)
            assert slave.store.config.broker_role == BrokerRole.ASYNC_MASTER
            assert slave.schedule is not None and not slave.schedule.started
            assert slave.ha_server is not None and slave.ha_client is not None  # every role listens for slaves
            set_role(cluster, "SYNC_MASTER", slave.address)
            # a SYNC_MASTER with no slave: as 4.9.3's HAService with no connection (isSlaveOK false)
            put = cluster.run(slave.put(Message.create(TOPIC, b"waits for no slave", queue_id=0)))
            assert put.status is PutMessageStatus.SLAVE_NOT_AVAILABLE
            assert slave.store.wait_dispatched()
            assert slave.store.max_offset(TOPIC, 0) == 1  # stored all the same
        finally:
            stop(cluster, slave)
