"""Topics auto-created by sends: each one is registered with the name server alone, not with the whole table.

4.9.3 sends its whole topic table (oneway) to the name servers per auto-created topic.  Here that was a
whole table encoded by the broker and decoded by the name server per created topic, on the same two cores
as the sends: 2,000 topics auto-created by one producer took ~100 s (4.9.3: ~20-30 s).  The created topic
now goes as an increment (what an admin's creation sends), and the name server routes it all the same.

Counts the topic configs in the registration bodies the broker encodes; never times anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketstore.client import Producer
from rocketstore.remoting.bodies import RegisterBrokerBody
from rocketstore.remoting.transport import run
from tests.integration.local_cluster import LocalCluster

NEW_TOPICS = 8


def test_each_auto_created_topic_is_registered_alone_and_routed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic("EdgesWarm")
        bodies: list[int] = []  # the topic count of each registration body encoded
        real_encode, real_compressed = RegisterBrokerBody.encode, RegisterBrokerBody.encode_compressed

        def encode(self: RegisterBrokerBody) -> bytes:
            bodies.append(len(self.topic_configs))
            return real_encode(self)

        def encode_compressed(self: RegisterBrokerBody) -> bytes:
            bodies.append(len(self.topic_configs))
            return real_compressed(self)

        async def send_all() -> None:
            async with Producer(cluster.namesrv_addr, "hunt30_edges_pg") as producer:
                await producer.send("EdgesWarm", b"warm")  # TBW102's route first
                monkeypatch.setattr(RegisterBrokerBody, "encode", encode)
                monkeypatch.setattr(RegisterBrokerBody, "encode_compressed", encode_compressed)
                for i in range(NEW_TOPICS):
                    topic = f"EdgesAuto{i}"
                    result = await producer.send(topic, b"auto-created")
                    assert result.status == "SEND_OK"
                    # routed before the next one is created: no two creations share a registration
                    await _wait_routed(cluster, topic)

        run(send_all())
        table = cluster.call(lambda: len(cluster.broker.topics))
        assert table > 2 * NEW_TOPICS  # (the system topics): a whole table is many more than one
        # one body per created topic, each of that topic alone; one whole table allowed (the periodic one)
        whole = [n for n in bodies if n > 1]
        assert len(whole) <= 1, f"registration bodies' topic counts {bodies}: whole tables per created topic"
        assert bodies.count(1) >= NEW_TOPICS, bodies
        routed = cluster.call(lambda: [cluster.namesrv.routes.route(f"EdgesAuto{i}") is not None
                                       for i in range(NEW_TOPICS)])
        assert all(routed)
        # the name server still holds the broker's whole table (an increment adds, never replaces)
        assert cluster.call(lambda: cluster.namesrv.routes.route("EdgesWarm")) is not None


async def _wait_routed(cluster: LocalCluster, topic: str) -> None:
    await asyncio.to_thread(cluster.wait_until, lambda: cluster.namesrv.routes.route(topic) is not None, 20.0,
                            f"{topic}'s route")
