"""A send refused because the disk is full says how full, as 4.9.3's SendMessageProcessor does with its
diskUtil(): ``the broker's disk is full [CL:  0.93 CQ:  0.93 INDEX:  0.93]``, the used share of the
commitlog's, the consume queues' and the index's partitions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.broker.stats_admin import disk_used_ratio
from rocketstore.client import Producer
from rocketstore.client.errors import ServiceNotAvailableError
from rocketstore.remoting.transport import run

DISK_UTIL = re.compile(r"the broker's disk is full \[CL: (.{5}) CQ: (.{5}) INDEX: (.{5})\], messages are put to "
                       r"the slave, message store has been shut down, etc\.")


def test_a_send_refused_for_a_full_disk_names_the_disks_usage(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("DiskFull", 1)
        store = cluster.broker.store
        store._cleaner.usage = lambda path: 0.95  # the commitlog's disk reports 95 % used: writes refused
        store.delete_expired_files()

        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "disk-full-producer") as producer:
                with pytest.raises(ServiceNotAvailableError) as refused:
                    await producer.send("DiskFull", b"late")
                return str(refused.value)

        text = run(send())
        found = DISK_UTIL.search(text)
        assert found is not None, text
        config = store.config
        expected = [disk_used_ratio(path) for path in (config.commit_log_dir, config.consume_queue_dir,
                                                        config.index_dir)]
        # Java's %5.2f of the real partitions (other writers on the machine may move them by a percent)
        assert [abs(float(shown) - ratio) <= 0.01 for shown, ratio in zip(found.groups(), expected)] == [True] * 3
