"""The replication settings of a broker's configuration act, as in 4.9.3, whose HAService and HAConnection
read them from MessageStoreConfig at every use (so ``mqadmin updateBrokerConfig`` changes them at once):
haSlaveFallbehindMax decides when a SYNC_MASTER answers SLAVE_NOT_AVAILABLE at once instead of waiting for a
slave that lags (isSlaveOK), and haTransferBatchSize caps the master's chunks.  They were kept and shown, but
acted on nothing: a lagging slave made every send wait slaveTimeout for FLUSH_SLAVE_TIMEOUT."""

from __future__ import annotations

import socket
from pathlib import Path

from local_cluster import LocalCluster
from test_replication import STORE, TOPIC, send

from rocketstore.broker.ha import REPORT, TRANSFER_HEADER
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole


def _update(cluster: LocalCluster, properties: dict[str, str]) -> None:
    async def go() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_broker_config(properties, broker_addr=cluster.broker_addr)

    run(go())


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    out = b""
    while len(out) < size:
        part = sock.recv(size - len(out))
        assert part, "the master closed the connection"
        out += part
    return out


def test_a_sync_master_answers_slave_not_available_for_a_slave_behind_its_fall_behind_max(
        tmp_path: Path) -> None:
    # slaveTimeout long enough that a wait for the silent slave cannot pass for the refusal
    sync: dict[str, object] = {**STORE, "broker_role": BrokerRole.SYNC_MASTER, "slave_timeout_ms": 1000}
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=sync) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        ha = cluster.broker.ha_server
        assert ha is not None
        _update(cluster, {"haSlaveFallbehindMax": "64"})
        with socket.create_connection(("127.0.0.1", ha.port)) as silent:
            # a slave that has everything so far, then acknowledges nothing more
            silent.sendall(REPORT.pack(cluster.broker.store.max_commit_log_offset))
            store = cluster.broker.store
            cluster.wait_until(lambda: ha.slaves and ha.push_max == store.max_commit_log_offset, 20,
                               "the slave's report")

            async def one() -> str:
                async with Producer(cluster.namesrv_addr, "fallbehind-producer", retry_times=0) as producer:
                    return (await producer.send(TOPIC, b"x" * 200)).status

            # the record alone puts the slave more than 64 bytes behind: no wait, SLAVE_NOT_AVAILABLE
            assert run(one()) == "SLAVE_NOT_AVAILABLE"
            _update(cluster, {"haSlaveFallbehindMax": str(256 << 20)})  # back to 4.9.3's default: it waits
            assert run(one()) == "FLUSH_SLAVE_TIMEOUT"
        cluster.wait_until(lambda: cluster.broker.store.max_offset(TOPIC, 0) == 2, 10, "both messages stored")


def test_the_master_cuts_its_transfers_at_its_transfer_batch_size(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        run(send(cluster, 20, pad=300))
        end = cluster.broker.store.max_commit_log_offset
        assert end > 3000
        ha = cluster.broker.ha_server
        assert ha is not None
        _update(cluster, {"haTransferBatchSize": "1000"})
        with socket.create_connection(("127.0.0.1", ha.port)) as slave:
            slave.settimeout(20)
            slave.sendall(REPORT.pack(0))  # an empty slave: from the start of the master's (only) segment
            sizes: list[int] = []
            offset = 0
            while offset < end:
                at, size = TRANSFER_HEADER.unpack(_read_exactly(slave, TRANSFER_HEADER.size))
                if not size:
                    continue  # a heartbeat
                assert at == offset
                _read_exactly(slave, size)
                sizes.append(size)
                offset += size
        assert max(sizes) == 1000
        assert sum(sizes) == end
