"""slaveReadEnable with the official C++ client (PyPI ``rocketmq`` 0.4.4): a master that finds a consumer
reading beyond the in-memory share of its commitlog (accessMessageInMemoryMaxRatio 0 % here: every read)
suggests whichBrokerWhenConsumeSlowly (brokerId 1), and the C++ push consumer pulls from the slave next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from test_replication import STORE, caught_up, send, start_slave, stop

from rocketstore.remoting.transport import run

pytestmark = requires_cpp_client

TOPIC = "ReplicatedTopic"  # test_replication.send's topic


def bodies(seen: list[dict[str, Any]]) -> set[str]:
    """The distinct messages (m0, m1, ...) a consumer run was pushed."""
    return {m["body"].split(" ")[0] for m in messages(seen)}


def test_cpp_consumer_reading_cold_messages_is_sent_to_the_slave(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "master", ha_listen_port=0, slave_read_enable=True,
                      store_overrides={**STORE, "access_message_in_memory_max_ratio": 0}) as cluster:
        slave = start_slave(cluster, tmp_path / "slave", slave_read_enable=True)
        try:
            run(send(cluster, 30))
            caught_up(cluster, slave)
            # with 0 % in memory no message is "hot", so a new group would start at the end: start it at 0
            for q in range(8):
                cluster.call(lambda q=q: cluster.broker.offsets.commit("cpp-cold-reader", TOPIC, q, 0))
            assert slave.slave_sync is not None and cluster.run(slave.slave_sync.sync_once())
            consumer = Runner(["consume", cluster.namesrv_addr, TOPIC, "cpp-cold-reader"], tmp_path)
            try:
                consumer.collect_until(lambda seen: len(bodies(seen)) >= 30, 60, "30 messages")
                # the master's answers suggested the slave: the next pulls (and their long polls) go there
                run(send(cluster, 30, first=30))
                consumer.collect_until(lambda seen: len(bodies(seen)) >= 60, 60, "30 more messages")
                consumer.stop()
            finally:
                consumer.kill()
            # each message at least once, not exactly once: the slave may dispatch a new message before the master
            # does (HA ships commitlog bytes, each store dispatches on its own), and the consumer, sent back to
            # the master after reading it from the slave, then pulls one past the master's queue end, which a
            # master answers OFFSET_MOVED to the queue's min offset (0 here), as 4.9.3's nextOffsetCorrection:
            # the queue is read again from 0
            assert bodies(consumer.seen) == {f"m{i}" for i in range(60)}
            assert cluster.call(lambda: slave.get_count) > 0, "the slave served some of the pulls"
        finally:
            stop(cluster, slave)
