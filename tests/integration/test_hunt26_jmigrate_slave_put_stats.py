"""A slave counts the records it takes from its master as puts, as 4.9.3's slave does.

4.9.3's slave adds every record its reput service dispatches to its store statistics (the per-topic put
times and sizes), so its runtime info's putMessageTimesTotal, msgPutTotalTodayNow, putMessageSizeTotal and
putTps follow its master's, and ``mqadmin clusterList`` shows the slave's InTPS beside the master's.  Ours
counted only the puts its own broker made: a slave replicating 30 messages a second showed InTPS 0.00 and a
total of 1 (nothing), as if it took nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, send, start_slave, stop

from rocketstore.broker.stats_admin import runtime_table
from rocketstore.remoting.transport import run

# Captured from 4.9.3 (mqadmin brokerStatus, a fresh Java slave catching up from a Java master under a Java
# producer): the slave counts what it replicated, the master what it stored.
JAVA_SLAVE = {"msgPutTotalTodayNow": "1015", "putMessageTimesTotal": "1015", "putMessageSizeTotal": "215728",
              "putMessageEntireTimeMax": "0", "putMessageDistributeTime": "null"}
JAVA_MASTER = {"msgPutTotalTodayNow": "1160", "putMessageTimesTotal": "1160", "putMessageSizeTotal": "246204"}


@pytest.fixture()
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as c:
        yield c


def test_the_slave_counts_the_records_it_replicated_as_puts(cluster: LocalCluster, tmp_path: Path) -> None:
    assert JAVA_SLAVE["msgPutTotalTodayNow"] == JAVA_SLAVE["putMessageTimesTotal"] != "1"
    run(send(cluster, 12))
    slave = start_slave(cluster, tmp_path / "slave")
    try:
        caught_up(cluster, slave)
        run(send(cluster, 5, first=12))
        caught_up(cluster, slave)
        master_table = cluster.call(lambda: runtime_table(cluster.broker))
        slave_table = cluster.call(lambda: runtime_table(slave))
        assert master_table["putMessageTimesTotal"] == "17"
        # the slave took the master's whole commitlog: the same records, the same bytes
        for key in ("msgPutTotalTodayNow", "putMessageTimesTotal", "putMessageSizeTotal"):
            assert slave_table[key] == master_table[key], (key, slave_table[key], master_table[key])
        # but it made no put of its own: no latency measured
        assert slave_table["putMessageEntireTimeMax"] == JAVA_SLAVE["putMessageEntireTimeMax"]
        # its put rate follows: two samples a second apart with records replicated between them
        stats = slave.stats.store
        cluster.call(lambda: stats.sample(1_000))
        run(send(cluster, 4, first=17))
        caught_up(cluster, slave)
        cluster.call(lambda: stats.sample(2_000))
        assert stats._samples[-1][1] - stats._samples[-2][1] == 4
    finally:
        stop(cluster, slave)
