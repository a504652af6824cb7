"""A C++ push consumer that holds no queue (more consumers than queues) is asked for its running info.

librocketmq writes the mqTable by hand and, when it is empty, leaves ``"mqTable":}`` (its loop's trailing
comma erase eats the opening brace instead); the admin client must still read the rest of the answer."""

from __future__ import annotations

from pathlib import Path

from cpp_driver import Runner, requires_cpp_client
from local_cluster import LocalCluster
from test_python_push_consumer import arun, create_topic, eventually

from rocketstore.client.admin import AdminClient
from rocketstore.client.errors import ClientError
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo


@requires_cpp_client
def test_an_idle_cpp_consumer_reports_an_empty_mq_table(tmp_path: Path) -> None:
    topic, group = "CppIdleT", "cpp-idle-group"
    with LocalCluster(tmp_path / "store") as cluster:
        arun(lambda: create_topic(cluster, topic, 1))
        runners = [Runner(["consume", cluster.namesrv_addr, topic, group], tmp_path / name) for name in "ab"]
        try:
            async def ask() -> list[ConsumerRunningInfo]:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    async def both_settled() -> list[ConsumerRunningInfo] | None:
                        try:
                            _, clients = await admin.consumer_connections(group)
                        except ClientError:
                            return None  # the consumers have not sent their first heartbeat yet
                        if len(clients) != 2:
                            return None
                        infos = [await admin.consumer_running_info(group, c.client_id) for c in clients]
                        held = sorted(len([k for k in i.mq_table if k[0] == topic]) for i in infos)
                        return infos if held == [0, 1] else None

                    return await eventually(both_settled, 60, "one C++ consumer holding the queue")

            infos = arun(ask)
            idle = next(i for i in infos if not any(k[0] == topic for k in i.mq_table))
            assert {s.topic for s in idle.subscriptions} == {topic, f"%RETRY%{group}"}
            assert idle.properties[ConsumerRunningInfo.PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
        finally:
            for runner in runners:
                runner.kill()
