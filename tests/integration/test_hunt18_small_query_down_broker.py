"""Query by key / unique key over a route that still lists a broker which cannot be reached (one that died
without unregistering stays routed until the name server drops it): 4.9.3's MQAdminImpl.queryMessage logs
that broker and answers from the others; only when no broker answers is it an error.  A real name server and
broker; the dead broker is a real registration at a closed port on 127.0.0.1."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore.broker.registration import Registrar
from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.errors import RemotingError
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.transport import run

TOPIC = "QueryPastDeadBroker"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _register_dead_broker(cluster: LocalCluster, topics: list[str]) -> Registrar:
    """broker-dead, at a port nothing listens on, registered with *topics*; its registrar (the connection the
    name server keeps it by, as a broker whose process hangs) stays open until the caller closes it."""
    port = _closed_port()
    configs = {t: TopicConfig(t, 1, 1, 6) for t in topics}

    async def go() -> Registrar:
        registrar = Registrar([cluster.namesrv_addr], cluster_name="DefaultCluster", broker_name="broker-dead",
                              broker_id=0, broker_addr=f"127.0.0.1:{port}", ha_server_addr=f"127.0.0.1:{port}",
                              body=lambda: RegisterBrokerBody(dict(configs), DataVersion(1, 1)), period_s=3600)
        await registrar.register_all()
        assert registrar.registered[cluster.namesrv_addr] is True
        return registrar

    return cluster.run(go())


def _admin(cluster: LocalCluster, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return await fn(admin)

    return run(go())


def _check_queries(cluster: LocalCluster, caplog: pytest.LogCaptureFixture, uniq_key: str) -> None:
    route = _admin(cluster, lambda a: a.route(TOPIC))
    assert len(route.broker_datas) == 2

    with caplog.at_level(logging.WARNING, logger="rocketstore.client.admin"):
        by_key = _admin(cluster, lambda a: a.query_by_key(TOPIC, "order-7"))
    assert [m.body for m in by_key] == [b"on the live broker"]
    assert any("left out" in r.getMessage() for r in caplog.records)
    by_uniq = _admin(cluster, lambda a: a.query_by_uniq_key(TOPIC, uniq_key))
    assert [m.body for m in by_uniq] == [b"on the live broker"]

    # a topic whose every broker fails: the error, not an empty answer
    with pytest.raises(RemotingError):
        _admin(cluster, lambda a: a.query_by_key("OnlyOnDead", "order-7"))


def test_query_by_key_and_unique_key_skip_a_broker_that_cannot_be_reached(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)
        async def send() -> str:
            async with Producer(cluster.namesrv_addr, "query-dead-producer") as producer:
                return (await producer.send(TOPIC, b"on the live broker", keys="order-7")).msg_id

        uniq_key = run(send())
        cluster.wait_dispatched()
        registrar = _register_dead_broker(cluster, [TOPIC, "OnlyOnDead"])
        try:
            _check_queries(cluster, caplog, uniq_key)
        finally:
            cluster.run(registrar.close(unregister=False))
