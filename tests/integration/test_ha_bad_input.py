"""Bad input on the HA port, both ways: what a master does with a peer that reports nonsense, and what a
slave does with a "master" that sends chunks that do not fit its commitlog.  Each is refused by closing
that connection; nothing is written, and the good peer goes on being served."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster
from test_replication import STORE, caught_up, send, start_slave, stop

from rocketstore.broker.ha import REPORT, TRANSFER_HEADER, HAClient
from rocketstore.remoting.transport import run
from rocketstore.store.config import BrokerRole, StoreConfig
from rocketstore.store.message_store import MessageStore


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as c:
        yield c


def ha_addr(cluster: LocalCluster) -> tuple[str, int]:
    assert cluster.broker.ha_server is not None
    return "127.0.0.1", cluster.broker.ha_server.port


def closed_by_peer(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """True once the peer has closed *sock* (reads EOF or a reset), skipping what it sent before."""
    sock.settimeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def test_the_master_closes_a_peer_reporting_offsets_it_does_not_have(cluster: LocalCluster) -> None:
    run(send(cluster, 20))
    end = cluster.broker.store.max_commit_log_offset
    for bad in (end + 1, -5, 1 << 62):
        with socket.create_connection(ha_addr(cluster)) as sock:
            sock.sendall(REPORT.pack(bad))
            assert closed_by_peer(sock), f"a report of {bad} is refused"
    # a partial report is held until it is whole; a whole one gets the data from there
    with socket.create_connection(ha_addr(cluster)) as sock:
        sock.sendall(REPORT.pack(end - 10)[:3])
        time.sleep(0.2)
        sock.sendall(REPORT.pack(end - 10)[3:])
        sock.settimeout(10)
        header = b""
        while len(header) < TRANSFER_HEADER.size:
            header += sock.recv(TRANSFER_HEADER.size - len(header))
        assert TRANSFER_HEADER.unpack(header) == (end - 10, 10)
    assert cluster.broker.store.max_commit_log_offset == end, "bad peers write nothing"


def test_a_slave_refuses_chunks_that_do_not_fit_and_keeps_what_it_has(cluster: LocalCluster, tmp_path: Path) -> None:
    """A slave that has followed the real master is pointed at a fake one sending a chunk at the wrong
    offset, then a chunk size past any batch: it drops each connection and its commitlog stays as it was."""
    slave = start_slave(cluster, tmp_path / "slave")
    run(send(cluster, 30))
    caught_up(cluster, slave)
    stop(cluster, slave)
    store = MessageStore.open(None, StoreConfig(store_path_root_dir=str(tmp_path / "slave"),
                                                broker_role=BrokerRole.SLAVE, **{**SMALL_STORE, **STORE}))
    try:
        end = store.max_commit_log_offset
        seen_reports: list[int] = []

        async def fake_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            (offset,) = REPORT.unpack(await reader.readexactly(REPORT.size))
            seen_reports.append(offset)
            if len(seen_reports) == 1:  # a chunk that does not start at the slave's end
                writer.write(TRANSFER_HEADER.pack(offset + 100, 4) + b"junk")
            else:  # a size no master sends
                writer.write(TRANSFER_HEADER.pack(offset, 1 << 30))
            await writer.drain()
            await reader.read()  # until the slave hangs up

        async def go() -> None:
            server = await asyncio.start_server(fake_master, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            client = HAClient(store, lambda: f"127.0.0.1:{port}", reconnect_s=0.05)
            client.start()
            try:
                deadline = time.monotonic() + 20
                while len(seen_reports) < 3 and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
            finally:
                await client.close()
                server.close()

        run(go())
        assert len(seen_reports) >= 3, "the slave reconnected after each refusal"
        assert set(seen_reports) == {end}, "and reported the same end every time"
        assert store.max_commit_log_offset == end, "nothing of the bad chunks was written"
    finally:
        store.close()
