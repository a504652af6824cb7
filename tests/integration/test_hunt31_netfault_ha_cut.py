"""A slave whose connection to the master's HA port is cut mid-chunk, cut mid-header, or stalled (bytes held,
no FIN) past haHousekeepingInterval, through a fault proxy: each time it says what happened (before, the
log line read "stopped: 500 bytes read on a total of 3212 expected bytes", or "stopped: " and nothing for
the stall), keeps none of a cut chunk, reconnects from its own end, and ends with the master's commitlog
byte for byte."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fault_proxy import FaultProxy
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, commitlog_bytes, send, start_slave, stop

from rocketstore.remoting.transport import run


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as c:
        yield c


def ha_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "rocketstore.broker.ha" and "stopped:" in r.getMessage()]


def test_a_slave_cut_or_stalled_mid_transfer_says_why_and_ends_byte_identical(
        cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketstore.broker.ha")
    assert cluster.broker.ha_server is not None
    cluster.broker.ha_server.heartbeat_s = 0.2  # an idle connection stays well within the slave's 1 s below
    proxy = cluster.run(FaultProxy("127.0.0.1", cluster.broker.ha_server.port).start())
    try:
        run(send(cluster, 20, pad=1500))  # ~33 KB: all in the first 64 KiB segment, where an empty slave starts
        proxy.stall_down()  # nothing reaches the slave until it is set up
        slave = start_slave(cluster, tmp_path / "slave", ha_master_address=proxy.address)
        try:
            client = slave.ha_client
            assert client is not None
            client.reconnect_s = 0.1
            client.housekeeping_s = 1.0  # haHousekeepingInterval, read at each wait

            # 1. the first chunk is cut 500 bytes in (mid-record), with a FIN
            proxy.cut_down_after(12 + 500, rst=False)
            proxy.resume_down()
            cluster.wait_until(lambda: proxy.cuts == 1, 20, "the first cut")
            proxy.forward()
            cluster.wait_until(lambda: any("bytes into" in line for line in ha_lines(caplog)), 20,
                               "the slave's line for the cut chunk")
            caught_up(cluster, slave)

            # 2. stalled (no FIN) past haHousekeepingInterval while the master has more to send
            proxy.stall_down()
            run(send(cluster, 5, first=20, pad=1500))
            cluster.wait_until(lambda: any("nothing from the master for 1 s" in line for line in ha_lines(caplog)),
                               20, "the slave's line for the stall")
            proxy.forward()
            caught_up(cluster, slave)

            # 3. cut mid-header (7 of the 12 header bytes), with a FIN
            proxy.cut_down_after(7, rst=False)
            run(send(cluster, 5, first=25, pad=1500))
            cluster.wait_until(lambda: proxy.cuts == 2, 20, "the mid-header cut")
            proxy.forward()
            run(send(cluster, 5, first=30, pad=1500))
            caught_up(cluster, slave)

            lines = ha_lines(caplog)
            assert any("the master closed the connection 500 bytes into" in line for line in lines), lines
            assert any("the master closed the connection 7 bytes into 12" in line for line in lines), lines
            assert all(not line.split("stopped:", 1)[1].strip().startswith("(") for line in lines), lines  # a reason
            end = cluster.broker.store.max_commit_log_offset
            assert slave.store.max_commit_log_offset == end
            assert commitlog_bytes(tmp_path / "slave", 0, end) == commitlog_bytes(tmp_path / "master", 0, end)
        finally:
            stop(cluster, slave)
    finally:
        cluster.run(proxy.close())
