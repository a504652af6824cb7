"""An admin's topic creation registers that topic alone with the name servers (4.9.3's updateAndCreateTopic ->
registerIncrementBrokerData: one REGISTER_BROKER holding the new topic at the table's new data version; the
name server upserts it and keeps the broker's other topics), instead of the whole table (10,000 topics:
1.4 MB and ~100 ms of the name server's CPU per creation).  And the cases where an increment must not be
what the name server ends with: a whole table read before it but sent after it, a change not registered
yet, a name server that restarted (it takes a registration's topics only when its data version moved).

Real name servers, brokers, registrars and clients on 127.0.0.1 port 0."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from local_cluster import LocalCluster, eventually, run_within

from rocketstore.broker.registration import Registrar
from rocketstore.client.admin import AdminClient
from rocketstore.namesrv import NameServer
from rocketstore.namesrv.handlers import NameServerHandlers
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import RegisterBrokerRequestHeader
from rocketstore.remoting.transport import Connection, run


def _record_registrations(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, RegisterBrokerBody, int]]:
    """Every REGISTER_BROKER the name servers made from now on are served: (broker address, its body as
    decoded, its size in bytes)."""
    seen: list[tuple[str, RegisterBrokerBody, int]] = []
    real = NameServerHandlers.register_broker

    async def recording(self: NameServerHandlers, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        body = RegisterBrokerBody.decode(request.body or b"", compressed=header.compressed)
        seen.append((header.broker_addr, body, len(request.body or b"")))
        return await real(self, conn, request)

    monkeypatch.setattr(NameServerHandlers, "register_broker", recording)
    return seen


def test_an_admin_topic_creation_registers_that_topic_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _record_registrations(monkeypatch)
    with LocalCluster(tmp_path / "store") as cluster:
        broker = cluster.broker
        registrar = broker.registrar
        assert registrar is not None

        def add_many() -> None:
            for i in range(300):
                broker.topics.update(TopicConfig(f"Many{i}", 4, 4))

        cluster.call(add_many)
        cluster.run(registrar.register_all())
        assert cluster.call(lambda: cluster.namesrv.routes.route("Many299")) is not None
        routes_before = cluster.call(lambda: {t: dict(q) for t, q in cluster.namesrv.routes.topic_queues.items()})
        seen.clear()

        cluster.create_topic("Fresh", queues=3)  # waits until the name server routes it

        version = cluster.call(lambda: broker.topics.data_version)
        assert [(addr, set(body.topic_configs), body.data_version) for addr, body, _ in seen] == \
            [(cluster.broker_addr, {"Fresh"}, version)], "not one registration of the new topic alone"
        route = cluster.call(lambda: cluster.namesrv.routes.route("Fresh"))
        assert route is not None and [(q.broker_name, q.read_queue_nums, q.write_queue_nums)
                                      for q in route.queue_datas] == [(cluster.broker_name, 3, 3)]
        after = cluster.call(lambda: {t: dict(q) for t, q in cluster.namesrv.routes.topic_queues.items()})
        assert {t: q for t, q in after.items() if t != "Fresh"} == routes_before  # the others untouched

        # the next whole registration carries the same version: the name server need not read it, and the
        # view it has is the broker's whole table
        cluster.run(registrar.register_all())
        live = cluster.call(lambda: cluster.namesrv.routes.live[cluster.broker_addr].data_version)
        assert live == version and set(after) >= {f"Many{i}" for i in range(300)} | {"Fresh"}

        # an update of it the same way; a deletion registers its new version alone (4.9.3 registers
        # nothing, the name server keeps the topic either way), so the next creation is an increment again
        seen.clear()

        async def admin_calls() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.create_topic("Fresh", broker_addr=cluster.broker_addr, read_queue_nums=5,
                                         write_queue_nums=5)
                await admin.delete_topic("Many0")  # from the broker, then from the name server
                await admin.create_topic("Fresh2", broker_addr=cluster.broker_addr, read_queue_nums=2,
                                         write_queue_nums=2)

        run(admin_calls())
        cluster.wait_until(lambda: cluster.namesrv.routes.route("Fresh2") is not None, 20, "Fresh2's route")
        cluster.wait_until(lambda: len(seen) >= 3, 20, "three registrations")
        assert [set(body.topic_configs) for _, body, _ in seen] == [{"Fresh"}, set(), {"Fresh2"}]
        assert all(size < 1000 for _, _, size in seen)
        assert cluster.call(lambda: cluster.namesrv.routes.topic_queues["Fresh"][cluster.broker_name]
                            .write_queue_nums) == 5


def _body(counter: int, queues: dict[str, int]) -> RegisterBrokerBody:
    return RegisterBrokerBody({n: TopicConfig(n, q, q) for n, q in queues.items()},
                              DataVersion(1_700_000_000_000 + counter, counter))


def _registrar(addr: str, body: list[RegisterBrokerBody]) -> Registrar:
    return Registrar([addr], cluster_name="DefaultCluster", broker_name="broker-a", broker_id=0,
                     broker_addr="127.0.0.1:10911", ha_server_addr="127.0.0.1:10912", body=lambda: body[0],
                     period_s=3600)


def _write_queues(namesrv: NameServer, topic: str) -> int | None:
    queue = namesrv.routes.topic_queues.get(topic, {}).get("broker-a")
    return None if queue is None else queue.write_queue_nums


def test_a_whole_table_read_before_an_increment_is_not_sent_after_it() -> None:
    """A whole registration is encoded off the loop (10,000 topics: ~200 ms); an admin's change meanwhile
    registers at once.  The whole table, read before the change, must not reach the name server after the
    increment: its older data version would be read and take the changed topic back."""
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        table = {f"Topic{i}": 4 for i in range(3000)}
        current = [_body(1, table)]
        registrar = _registrar(namesrv.address, current)
        try:
            await registrar.register_all()
            assert _write_queues(namesrv, "Topic7") == 4
            whole = asyncio.get_running_loop().create_task(registrar.register_all())
            await asyncio.sleep(0)  # it has read the table (version 1) and is encoding it
            current[0] = _body(2, {**table, "Topic7": 8})
            registrar.register_increment(_body(2, {"Topic7": 8}), follows=DataVersion(1_700_000_000_001, 1))
            await whole
            await eventually(lambda: namesrv.routes.live["127.0.0.1:10911"].data_version.counter == 2, 10,
                             "the increment registered")
            await registrar.register_all()  # a round trip more: nothing older is still on its way
            assert _write_queues(namesrv, "Topic7") == 8
            assert namesrv.routes.live["127.0.0.1:10911"].data_version.counter == 2
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)


def test_an_increment_on_a_base_the_name_server_lacks_becomes_the_whole_table() -> None:
    """The name server must hold the table as it was just before the change: after a change not registered
    yet (an auto-created topic waits for the coalesced whole registration) the increment alone would give
    the name server the newer data version, and the whole table that follows with that same version would
    not be read: the other new topic would stay unrouted."""
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        current = [_body(1, {"Old": 4})]
        registrar = _registrar(namesrv.address, current)
        try:
            await registrar.register_all()
            current[0] = _body(2, {"Old": 4, "AutoCreated": 4})  # not registered yet
            current[0] = _body(3, {"Old": 4, "AutoCreated": 4, "ByAdmin": 2})
            registrar.register_increment(_body(3, {"ByAdmin": 2}), follows=DataVersion(1_700_000_000_002, 2))
            await eventually(lambda: registrar._again.is_set(), 10, "a whole registration asked for")
            await registrar.register_all()  # what the registration loop does when asked
            assert _write_queues(namesrv, "AutoCreated") == 4 and _write_queues(namesrv, "ByAdmin") == 2
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)


def test_an_increment_to_a_restarted_name_server_becomes_the_whole_table() -> None:
    """A name server restarted between two registrations holds nothing: an increment would be its first
    registration of the broker (it takes those topics only), and the next whole table, at the same data
    version, would not be read.  A new connection to it means the whole table goes instead."""
    async def go() -> None:
        namesrv = NameServer()
        await namesrv.start("127.0.0.1", 0)
        port = namesrv.port
        current = [_body(1, {f"Topic{i}": 4 for i in range(50)})]
        registrar = _registrar(namesrv.address, current)
        try:
            await registrar.register_all()
            await namesrv.close()
            namesrv = NameServer()
            await namesrv.start("127.0.0.1", port)
            current[0] = _body(2, {**{f"Topic{i}": 4 for i in range(50)}, "New": 2})
            registrar.register_increment(_body(2, {"New": 2}), follows=DataVersion(1_700_000_000_001, 1))
            await eventually(lambda: registrar._again.is_set(), 10, "a whole registration asked for")
            await registrar.register_all()
            assert _write_queues(namesrv, "New") == 2 and _write_queues(namesrv, "Topic49") == 4
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 60)
