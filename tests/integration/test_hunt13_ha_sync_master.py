"""What a SYNC_MASTER writes for itself.  4.9.3 writes a due delayed message (ScheduleMessageService's
messageTimeup) and a consumer's sent-back message (CONSUMER_SEND_MSG_BACK) with waitStoreMsgOK=false, so
neither waits for the disk or a slave: with the slave gone a delayed message is delivered once, not written
again every 100 ms (DELAY_FOR_A_WHILE) as a failed delivery would be, and a send-back succeeds (a failed one
makes the Java consumer send the message to the retry topic itself: twice stored).  With the slave there,
the delivered message reaches the slave and is served from it."""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster
from test_replication import STORE, caught_up, start_slave, stop

from rocketstore.broker.schedule import SCHEDULE_TOPIC
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.message.properties import PropertyName
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import connect, run
from rocketstore.store.config import BrokerRole

TOPIC = "SyncDelayTopic"
SYNC_MASTER: dict[str, object] = {**STORE, "broker_role": BrokerRole.SYNC_MASTER, "message_delay_level": "1s 2s"}


def send_delayed(cluster: LocalCluster, body: bytes) -> str:
    async def go() -> str:
        async with Producer(cluster.namesrv_addr, "sync-delay-producer") as producer:
            return (await producer.send(TOPIC, body, properties={"DELAY": "1"}, queue_id=0)).status

    return run(go())


def test_a_sync_master_without_its_slave_delivers_a_delayed_message_once(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=SYNC_MASTER) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        assert send_delayed(cluster, b"due in a second") == "SLAVE_NOT_AVAILABLE", "stored, said so"
        schedule = cluster.broker.schedule
        assert schedule is not None
        # delivered and done with: the level's delivery offset moves past it (a failed delivery stays put
        # and writes the message again 100 ms later)
        cluster.wait_until(lambda: schedule.offsets.get(1) == 1, 8, "the delivery offset of level 1 past it")
        cluster.wait_dispatched()
        delivered = cluster.call(lambda: cluster.broker.store.get(TOPIC, 0, 0, 32).messages)
        assert [m.body for m in delivered] == [b"due in a second"]
        assert schedule.delivered_count == 1


def test_a_delayed_message_delivered_on_a_sync_master_is_served_by_its_slave(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=SYNC_MASTER) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            cluster.wait_until(lambda: cluster.broker.ha_server is not None and cluster.broker.ha_server.slaves, 20,
                               "the slave to connect")
            assert send_delayed(cluster, b"replicated when due") == "SEND_OK"
            cluster.wait_until(lambda: slave.store.max_offset(SCHEDULE_TOPIC, 0) == 1, 10,
                               "the waiting message in the slave's SCHEDULE_TOPIC_XXXX queue 0")
            cluster.wait_until(lambda: slave.store.max_offset(TOPIC, 0) == 1, 10, "the delivered message on the slave")
            caught_up(cluster, slave)
            got = cluster.call(lambda: slave.store.get(TOPIC, 0, 0, 32).messages)
            assert [m.body for m in got] == [b"replicated when due"]
        finally:
            stop(cluster, slave)


def test_a_sync_master_without_its_slave_takes_a_consumers_send_back(tmp_path: Path) -> None:
    default_levels = {**STORE, "broker_role": BrokerRole.SYNC_MASTER}  # level 3 (the first retry's): 10 s
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=default_levels) as cluster:
        cluster.create_topic(TOPIC, queues=1)

        async def send_and_give_back() -> RemotingCommand:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_subscription_group("back-group")
            async with Producer(cluster.namesrv_addr, "sync-back-producer") as producer:
                sent = await producer.send(TOPIC, b"consumed, failed, given back")
            assert sent.status == "SLAVE_NOT_AVAILABLE"
            offset = int(sent.offset_msg_id[-16:], 16)
            conn = await connect(cluster.broker_addr)
            try:
                ext = {"offset": str(offset), "group": "back-group", "delayLevel": "0", "originMsgId": sent.msg_id,
                       "originTopic": TOPIC}
                return await conn.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext), 10)
            finally:
                conn.close()

        back = run(send_and_give_back())
        assert back.code == ResponseCode.SUCCESS, back.remark
        cluster.wait_until(lambda: cluster.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 1, 10,
                           "the retry waiting at level 3 in SCHEDULE_TOPIC_XXXX")
        waiting = cluster.call(lambda: cluster.broker.store.get(SCHEDULE_TOPIC, 2, 0, 32).messages)
        assert len(waiting) == 1
        assert waiting[0].properties.get(PropertyName.WAIT) == "false", "stored as 4.9.3 stores it"
