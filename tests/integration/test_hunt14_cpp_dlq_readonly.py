"""The official C++ client 1.x (PyPI ``rocketmq`` 0.4.4) whose consumer gives up on a message while the
group's %DLQ% topic is read-only (perm 4, as an operator leaves it so that nothing but dead letters goes
there): 4.9.3 checks only the %RETRY% topic's perm in CONSUMER_SEND_MSG_BACK, so the dead letter is stored
(with DELAY=0) and the consumer moves on.  Our broker answered NO_PERMISSION, and the client kept consuming
the same message again and again."""

from __future__ import annotations

from pathlib import Path

from cpp_driver import Runner, messages, requires_cpp_client
from local_cluster import LocalCluster
from test_cpp_client import FAST_DELAYS, produce

from rocketstore.broker.groups import SubscriptionGroupConfig
from rocketstore.remoting.bodies import Perm, TopicConfig

pytestmark = requires_cpp_client


def test_cpp_consumer_gives_up_on_a_message_into_a_read_only_dlq(tmp_path: Path) -> None:
    topic, group = "CppReadOnlyDlqTopic", "cpp-readonly-dlq-group"
    dlq = "%DLQ%" + group
    with LocalCluster(tmp_path / "store", store_overrides=FAST_DELAYS) as cluster:
        # no retry at all (1.x sends no maxReconsumeTimes: the group's retryMaxTimes decides), a read-only DLQ
        cluster.call(lambda: cluster.broker.groups.update(SubscriptionGroupConfig(group_name=group,
                                                                                  retry_max_times=0)))
        cluster.call(lambda: cluster.broker.topics.update(TopicConfig(dlq, 1, 1, Perm.READ)))
        [sent] = produce(cluster, tmp_path, topic, "cpp-readonly-dlq-producer", 1)
        assert sent["status"] == "OK"
        consumer = Runner(["consume", cluster.namesrv_addr, topic, group, "*", "--fail-always"], tmp_path)
        try:
            consumer.collect_until(lambda seen: len(messages(seen)) >= 1, 30, "the delivery")
            cluster.wait_until(lambda: cluster.broker.store.max_offset(dlq, 0) == 1, 20, "the message in the DLQ")
            consumer.stop()
        finally:
            consumer.kill()
        tries = [m for m in messages(consumer.seen) if m["id"] == sent["msg_id"]]
        assert [m["reconsume_times"] for m in tries] == [0], "delivered once, then given up"
        [dead] = cluster.call(lambda: cluster.broker.store.get(dlq, 0, 0, 32).messages)
        assert (dead.reconsume_times, dead.properties["RETRY_TOPIC"], dead.properties["DELAY"]) == (1, topic, "0")
        assert dead.properties["UNIQ_KEY"] == sent["msg_id"]
        assert cluster.call(lambda: cluster.broker.topics.get(dlq)).perm == Perm.READ  # type: ignore[union-attr]
