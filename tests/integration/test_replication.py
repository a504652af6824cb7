"""Master/slave replication: a master LocalCluster and a slave broker (brokerId 1, brokerRole SLAVE) on the
same name server, each on its own store directory, the slave following the master's HA port.

What a user of RocketMQ would check: the slave's commitlog is the master's, byte for byte, from where it
started; its own consume queues serve the same messages; it refuses sends; a restarted slave goes on from
its end; an empty slave starts at the master's last segment; a SYNC_MASTER answers SEND_OK only with a
slave that has the record and SLAVE_NOT_AVAILABLE without one (the message is stored either way); the
slave takes the master's topics, groups and consumer offsets.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.ha import REPORT
from rocketstore.client import Producer, PullConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.message.record import Message
from rocketstore.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketstore.remoting.transport import connect, run
from rocketstore.store.config import BrokerRole, StoreConfig

TOPIC = "ReplicatedTopic"
SEGMENT = 64 * 1024
STORE: dict[str, Any] = {"mapped_file_size_commit_log": SEGMENT}


def start_slave(cluster: LocalCluster, store_dir: Path, **overrides: Any) -> Broker:
    return cluster.start_slave(store_dir, cluster.broker_name, store_overrides=STORE, **overrides)


def stop(cluster: LocalCluster, broker: Broker) -> None:
    cluster.run(broker.close())


def caught_up(cluster: LocalCluster, slave: Broker) -> None:
    """The slave has the master's commitlog and both have dispatched all of it (the tests compare their
    consume queues: the master's are built asynchronously too)."""
    cluster.wait_until(lambda: slave.store.max_commit_log_offset == cluster.broker.store.max_commit_log_offset
                       and slave.store.dispatch_behind_bytes == 0 and cluster.broker.store.dispatch_behind_bytes == 0,
                       30, "the slave to catch up")


def commitlog_bytes(store_dir: Path, start: int, end: int) -> bytes:
    """The commitlog's bytes [start, end) read from its segment files."""
    out = bytearray()
    directory = store_dir / "commitlog"
    offset = start
    while offset < end:
        base = offset - offset % SEGMENT
        with open(directory / f"{base:020d}", "rb") as f:
            f.seek(offset - base)
            chunk = f.read(min(end, base + SEGMENT) - offset)
        out += chunk
        offset += len(chunk)
    return bytes(out)


async def send(cluster: LocalCluster, count: int, *, first: int = 0, pad: int = 100) -> list[str]:
    async with Producer(cluster.namesrv_addr, "ha-producer") as producer:
        return [(await producer.send(TOPIC, f"m{i} ".encode() + b"x" * pad, tags="T", keys=f"k{i}")).msg_id
                for i in range(first, first + count)]


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as c:
        yield c


def test_the_slave_holds_the_masters_commitlog_and_serves_its_messages(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        cluster.wait_until(lambda: slave.ha_client is not None and slave.ha_client.connected_to, 20,
                           "the slave to connect to the master's HA port")
        ids = run(send(cluster, 300))  # ~50 KiB a 64 KiB segment: crosses into a second segment
        caught_up(cluster, slave)
        end = cluster.broker.store.max_commit_log_offset
        assert end > SEGMENT, "the test writes past one segment"
        assert commitlog_bytes(tmp_path / "slave", 0, end) == commitlog_bytes(tmp_path / "master", 0, end)
        for q in range(8):
            mine = cluster.call(lambda q=q: cluster.broker.store.get(TOPIC, q, 0, 1000).messages)
            theirs = cluster.call(lambda q=q: slave.store.get(TOPIC, q, 0, 1000).messages)
            assert theirs == mine, f"the slave's queue {q} lists what the master's does"
        assert sum(cluster.call(lambda q=q: slave.store.max_offset(TOPIC, q)) for q in range(8)) == 300
        found = cluster.call(lambda: slave.store.query(TOPIC, "k7", 10).messages)
        assert [m.uniq_key for m in found] == [ids[7]], "the slave's index is built too"

        async def send_to_slave() -> RemotingCommand:
            conn = await connect(slave.address)
            ext = {"a": "p", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
                   "j": "0", "k": "false", "m": "false"}
            try:
                return await conn.request(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"x"), 5)
            finally:
                conn.close()

        refused = run(send_to_slave())
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert cluster.call(lambda: slave.store.max_commit_log_offset) == end, "a slave writes nothing of its own"
    finally:
        stop(cluster, slave)


def test_a_restarted_slave_goes_on_from_its_end(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    run(send(cluster, 50))
    caught_up(cluster, slave)
    stop(cluster, slave)
    run(send(cluster, 400, first=50))  # written while the slave is away
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        caught_up(cluster, slave)
        end = cluster.broker.store.max_commit_log_offset
        assert commitlog_bytes(tmp_path / "slave", 0, end) == commitlog_bytes(tmp_path / "master", 0, end)
        total = sum(cluster.call(lambda q=q: slave.store.max_offset(TOPIC, q)) for q in range(8))
        assert total == 450
    finally:
        stop(cluster, slave)


def test_an_empty_slave_starts_at_the_masters_last_segment(cluster: LocalCluster, tmp_path: Path) -> None:
    run(send(cluster, 800))  # several segments before any slave exists
    end = cluster.broker.store.max_commit_log_offset
    last_segment = end - end % SEGMENT
    assert last_segment >= 2 * SEGMENT
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        caught_up(cluster, slave)
        assert slave.store.min_commit_log_offset == last_segment, "no history before the master's last segment"
        assert commitlog_bytes(tmp_path / "slave", last_segment, end) == \
            commitlog_bytes(tmp_path / "master", last_segment, end)
        run(send(cluster, 10, first=800))
        caught_up(cluster, slave)
        stop(cluster, slave)  # a store whose first segment is not at 0 reopens and goes on
        run(send(cluster, 10, first=810))
        slave = start_slave(cluster, tmp_path / "slave")
        caught_up(cluster, slave)
        end = cluster.broker.store.max_commit_log_offset
        assert slave.store.min_commit_log_offset == last_segment
        assert commitlog_bytes(tmp_path / "slave", last_segment, end) == \
            commitlog_bytes(tmp_path / "master", last_segment, end)
    finally:
        stop(cluster, slave)


def test_a_sync_master_answers_for_its_slave(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0,
                      store_overrides={**STORE, "broker_role": BrokerRole.SYNC_MASTER}) as cluster:
        async def one(first: int) -> str:
            async with Producer(cluster.namesrv_addr, "sync-producer") as producer:
                return (await producer.send(TOPIC, f"sync {first}".encode())).status

        assert run(one(0)) == "SLAVE_NOT_AVAILABLE", "no slave: stored, but said so"
        assert cluster.call(lambda: cluster.broker.put_count) == 1
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            cluster.wait_until(lambda: cluster.broker.ha_server is not None and cluster.broker.ha_server.slaves, 20,
                               "the slave to connect")
            assert run(one(1)) == "SEND_OK"
            end = cluster.broker.store.max_commit_log_offset
            assert cluster.broker.ha_server is not None and cluster.broker.ha_server.push_max >= end, \
                "SEND_OK only once the slave acknowledged the record"
        finally:
            stop(cluster, slave)


def test_the_slave_takes_the_masters_topics_groups_and_offsets(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        async def configure() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.create_topic("SyncedTopic", broker_addr=cluster.broker_addr, read_queue_nums=3,
                                         write_queue_nums=3)
                await admin.update_subscription_group("synced-group")

        run(configure())
        cluster.call(lambda: cluster.broker.offsets.commit("synced-group", "SyncedTopic", 2, 42))
        assert cluster.run(slave.slave_sync.sync_once()) if slave.slave_sync else False
        tc = cluster.call(lambda: slave.topics.get("SyncedTopic"))
        assert tc is not None and tc.read_queue_nums == 3
        assert cluster.call(lambda: slave.groups.get("synced-group")) is not None
        assert cluster.call(lambda: slave.offsets.query("synced-group", "SyncedTopic", 2)) == 42
        assert (tmp_path / "slave" / "config" / "delayOffset.json").exists()
        assert cluster.call(lambda: slave.topics.data_version) == cluster.call(lambda: cluster.broker.topics.data_version)
    finally:
        stop(cluster, slave)


def test_the_route_lists_the_slave_beside_the_master(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        async def route() -> dict[int, str]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                for _ in range(100):
                    data = await admin.route("TBW102")
                    addrs = data.broker(cluster.broker_name).broker_addrs if data.broker(cluster.broker_name) else {}
                    if 1 in addrs:
                        return dict(addrs)
                    await asyncio.sleep(0.1)
                return {}

        assert run(route()) == {0: cluster.broker_addr, 1: slave.address}
    finally:
        stop(cluster, slave)


def test_consumers_read_from_the_slave_while_the_master_is_down(cluster: LocalCluster, tmp_path: Path) -> None:
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        run(send(cluster, 40))
        caught_up(cluster, slave)
        cluster.call(lambda: cluster.broker.offsets.commit("reader", TOPIC, 0, 2))
        assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
        cluster.run(cluster.broker.close())  # the master goes away (it unregisters)

        async def read_all() -> tuple[list[bytes], int]:
            async with PullConsumer(cluster.namesrv_addr, "reader") as consumer:
                queues: list[Any] = []
                for _ in range(100):  # until the name server's route shows the slave alone
                    queues = await consumer.queues(TOPIC)
                    if queues:
                        break
                    await asyncio.sleep(0.05)
                bodies: list[bytes] = []
                for mq in queues:
                    offset = 0
                    while True:
                        result = await consumer.pull(mq, offset, 32)
                        if not result.messages:
                            break
                        bodies += [m.body for m in result.messages]
                        offset = result.next_begin_offset
                committed = await consumer.committed_offset(next(q for q in queues if q.queue_id == 0))
                return bodies, committed

        bodies, committed = run(read_all())
        assert sorted(b.split(b" ")[0] for b in bodies) == sorted(f"m{i}".encode() for i in range(40))
        assert committed == 2, "the slave answers with the offsets it took from the master"
    finally:
        stop(cluster, slave)


def test_a_sync_master_whose_slave_stops_acknowledging_answers_flush_slave_timeout(tmp_path: Path) -> None:
    """A "slave" that reports once and then falls silent (stays connected): the send waits slaveTimeout for
    its acknowledgement and is answered FLUSH_SLAVE_TIMEOUT, the message stored all the same."""
    with LocalCluster(tmp_path / "master", ha_listen_port=0,
                      store_overrides={**STORE, "broker_role": BrokerRole.SYNC_MASTER, "slave_timeout_ms": 300}
                      ) as cluster:
        assert cluster.broker.ha_server is not None
        with socket.create_connection(("127.0.0.1", cluster.broker.ha_server.port)) as silent:
            silent.sendall(REPORT.pack(cluster.broker.store.max_commit_log_offset or 0))
            cluster.wait_until(lambda: cluster.broker.ha_server is not None and cluster.broker.ha_server.slaves, 20,
                               "the silent slave to be counted")

            async def one() -> str:
                async with Producer(cluster.namesrv_addr, "sync-producer", retry_times=0) as producer:
                    return (await producer.send(TOPIC, b"waits for a slave that never answers")).status

            assert run(one()) == "FLUSH_SLAVE_TIMEOUT"
        cluster.wait_until(lambda: sum(cluster.broker.store.max_offset(TOPIC, q) for q in range(8)) == 1, 10,
                           "the message in the consume queues")


def test_a_master_whose_ha_port_is_taken_serves_slaves_on_another(cluster: LocalCluster, tmp_path: Path) -> None:
    """listenPort + 1 is only a convention: when it is taken the master listens for slaves on a port the OS
    picks and registers that one, and its slave (which asks the name server) follows it there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with socket.socket() as blocker:
        try:
            blocker.bind(("127.0.0.1", port + 1))
        except OSError:
            pytest.skip(f"port {port + 1} is in use already")
        blocker.listen()
        config = BrokerConfig(broker_name="broker-b", namesrv_addr=cluster.namesrv_addr, listen_port=port,
                              listen_host="127.0.0.1", broker_ip1="127.0.0.1")
        master = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "master-b"), **{**SMALL_STORE, **STORE}))
        cluster.run(master.start())
        try:
            assert master.ha_server is not None and master.ha_server.port != port + 1
            slave = cluster.start_slave(tmp_path / "slave-b", "broker-b", store_overrides=STORE)
            try:
                cluster.call(lambda: master.put_now(Message.create("HaPortTopic", b"x", tags="T")))
                cluster.wait_until(lambda: slave.store.max_commit_log_offset == master.store.max_commit_log_offset > 0,
                                   20, "the slave to follow the master on its other HA port")
            finally:
                stop(cluster, slave)
        finally:
            stop(cluster, master)
