"""A slave that comes back after its master's retention deleted the commitlog it still needs.

The slave stopped at some offset; meanwhile the master wrote several segments and deleted the old ones.
The master has nothing to send from the slave's offset, so (as 4.9.3's HAConnection) it sends heartbeats
at that offset for ever and the slave never catches up.  4.9.3 says so in its log (findMappedFileByOffset's
"Offset not matched" on every try); this master said nothing at all: the slave sat connected and silent.
Now the master logs it once per connection, and the slave keeps its store as it is."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from test_replication import STORE, TOPIC, caught_up, send, start_slave, stop

from rocketstore.remoting.transport import run


def test_the_master_says_why_a_slave_behind_its_retention_cannot_catch_up(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.ha")
    with LocalCluster(tmp_path / "master", ha_listen_port=0, store_overrides=STORE) as cluster:
        cluster.create_topic(TOPIC, queues=1)
        master = cluster.broker
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            run(send(cluster, 10))
            caught_up(cluster, slave)
            slave_end = slave.store.max_commit_log_offset
        finally:
            stop(cluster, slave)
        run(send(cluster, 800, first=10))  # several segments while the slave is away
        cluster.wait_dispatched()  # retention leaves a segment the dispatcher has not read yet
        far_future_ms = int(time.time() * 1000) + 10**10
        cluster.call(lambda: master.store.delete_expired_files(force=True, now_ms=far_future_ms))
        first = master.store.min_commit_log_offset
        assert first > slave_end, "retention deleted the segments the slave needs"
        slave = start_slave(cluster, tmp_path / "slave")
        try:
            assert slave.ha_client is not None
            cluster.wait_until(lambda: "cannot catch up" in caplog.text, 30, "the master to say why")
            assert f"needs commitlog offset {slave_end} but this master's commitlog starts at {first}" in caplog.text
            assert cluster.call(lambda: slave.store.max_commit_log_offset) == slave_end, "nothing appended"
        finally:
            stop(cluster, slave)
