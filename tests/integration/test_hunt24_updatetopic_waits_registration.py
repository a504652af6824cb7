"""UPDATE_AND_CREATE_TOPIC is answered once the name servers took the topic, as 4.9.3's updateAndCreateTopic
(registerIncrementBrokerData waits for the name servers' answers, up to registerBrokerTimeoutMills): a
producer sending right after ``mqadmin updateTopic`` finds the route.  The real 4.9.3 Java producer, sending
right after ``mqadmin updateTopic`` to our broker (autoCreateTopicEnable=false), once got "No route info of
this topic": ours answered before its registration of the topic reached the name server.

A real name server and broker on 127.0.0.1 port 0; the name server's REGISTER_BROKER is slowed so the answer
cannot win the race by chance."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.namesrv.handlers import NameServerHandlers
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import Connection, connect


async def _create_then_route(broker_addr: str, namesrv_addr: str, topic: str) -> tuple[int, int]:
    broker = await connect(broker_addr)
    namesrv = await connect(namesrv_addr)
    try:
        created = await broker.request(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}), 10)
        route = await namesrv.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                              {"topic": topic}), 10)
        return created.code, route.code
    finally:
        broker.close()
        namesrv.close()


def test_the_topic_is_routed_when_its_creation_is_answered(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = NameServerHandlers.register_broker

    async def slow(self: NameServerHandlers, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.5)
        return await real(self, conn, request)

    monkeypatch.setattr(NameServerHandlers, "register_broker", slow)  # (the router takes it at start)
    with LocalCluster(tmp_path / "store") as cluster:
        created, routed = cluster.run(_create_then_route(cluster.broker_addr, cluster.namesrv_addr,
                                                         "JustMade"))
    assert created == ResponseCode.SUCCESS
    assert routed == ResponseCode.SUCCESS, "the creation was answered before the name server had the topic"


def test_an_increment_a_restarted_name_server_cannot_take_ends_with_the_whole_table_registered() -> None:
    """The increment's task (what UPDATE_AND_CREATE_TOPIC waits for) ends once the name server routes the
    topic, also when the increment could not go there (a restarted name server holds no base for it) and the
    whole table went instead: 4.9.3 sends its increment anyway and the restarted name server takes it."""
    from test_hunt18_registration_increment import _body, _registrar, _write_queues

    from rocketstore.namesrv import NameServer
    from rocketstore.remoting.bodies import DataVersion
    from rocketstore.remoting.transport import run

    async def go() -> tuple[int | None, int | None]:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        port = namesrv.port
        current = [_body(1, {f"Topic{i}": 4 for i in range(20)})]
        registrar = _registrar(namesrv.address, current)
        try:
            await registrar.register_all()
            await namesrv.close()
            namesrv = NameServer()
            await namesrv.start("127.0.0.1", port)
            current[0] = _body(2, {**{f"Topic{i}": 4 for i in range(20)}, "New": 2})
            task = registrar.register_increment(_body(2, {"New": 2}),
                                                follows=DataVersion(1_700_000_000_001, 1))
            assert task is not None
            await task
            return _write_queues(namesrv, "New"), _write_queues(namesrv, "Topic19")
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    assert run(go()) == (2, 4)
