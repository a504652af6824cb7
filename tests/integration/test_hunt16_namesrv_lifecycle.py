"""Name server lifecycle as 4.9.3 has it: what an expired broker's connection becomes, how long a broker's
registration round may take against a name server that connects late or never answers, and which answer a
slave takes its master from when several name servers answer differently.  Real name servers, brokers and
sockets on 127.0.0.1 port 0, on the test's loop."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from local_cluster import SMALL_STORE, eventually, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.registration import Registrar
from rocketstore.client.admin import AdminClient
from rocketstore.namesrv import NameServer
from rocketstore.namesrv.handlers import ORDER_TOPIC_CONFIG
from rocketstore.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from rocketstore.store.config import StoreConfig


async def _namesrv(**kwargs: object) -> NameServer:
    namesrv = NameServer(**kwargs)  # type: ignore[arg-type]
    await namesrv.start("127.0.0.1", 0)
    return namesrv


def _registrar(namesrv_addrs: list[str], *, broker_id: int = 0, timeout_s: float = 6.0,
               seen: list[dict[str, str]] | None = None) -> Registrar:
    """A broker-a registrar (master at 127.0.0.1:10911, HA 10912; slave at 10921, HA 10922)."""
    port = 10911 if broker_id == 0 else 10921
    return Registrar(namesrv_addrs, cluster_name="DefaultCluster", broker_name="broker-a",
                     broker_id=broker_id,
                     broker_addr=f"127.0.0.1:{port}", ha_server_addr=f"127.0.0.1:{port + 1}",
                     body=lambda: RegisterBrokerBody({}, DataVersion()), period_s=600, timeout_s=timeout_s,
                     on_order_topics=seen.append if seen is not None else None)


def test_an_expired_broker_loses_its_connection_and_registers_again_over_a_new_one(tmp_path: Path) -> None:
    """4.9.3's scanNotActiveBroker closes the channel of a broker it expires (RemotingUtil.closeChannel);
    the connection stayed open here.  The broker's next registration connects again and is taken."""
    async def go() -> None:
        namesrv = await _namesrv(broker_expiry_ms=400, scan_interval_s=0.05)
        config = BrokerConfig(broker_name="broker-a", namesrv_addr=namesrv.address, listen_port=0,
                              listen_host="127.0.0.1", broker_ip1="127.0.0.1")
        broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "broker-a"), **SMALL_STORE))
        await broker.start()
        try:
            registrar = broker.registrar
            assert registrar is not None
            registrar.period_s = 3600.0  # falls silent, its connection open (the loop's next turn: 30 s on)
            assert "broker-a" in namesrv.routes.brokers
            assert len(namesrv.server.connections) == 1
            (first,) = namesrv.server.connections
            await eventually(lambda: "broker-a" not in namesrv.routes.brokers, 10, "broker-a to expire")
            await eventually(lambda: first.is_closed and not namesrv.server.connections, 10,
                             "the expired broker's connection to be closed")
            await registrar.register_all()
            assert registrar.registered[namesrv.address] is True
            assert "broker-a" in namesrv.routes.brokers
            (second,) = namesrv.server.connections
            assert second is not first and not second.is_closed
        finally:
            await broker.close()
            await namesrv.close()

    run_within(go, 40)


def test_a_slow_connect_counts_against_the_registration_timeout() -> None:
    """4.9.3's invokeSync gives the request only what the connect left of the timeout.  Here the request had a
    whole timeout after a slow connect.  The name server is a real one behind a proxy whose accept queue is
    full (the connect's SYNs go unanswered) until it is drained 2 s on, and which passes the answer back 1.8 s
    after that: past what the connect left of the 3 s registerBrokerTimeoutMills, within a whole one.  So the
    registration counts as failed, though the name server took it."""
    async def go() -> None:
        loop = asyncio.get_running_loop()
        namesrv = await _namesrv()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        listener.setblocking(False)
        host, port = listener.getsockname()
        addr = f"{host}:{port}"
        filler = socket.create_connection((host, port))  # fills the accept queue of backlog 0
        tasks: list[asyncio.Task[None]] = []
        writers: list[asyncio.StreamWriter] = []

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
            while chunk := await reader.read(65536):
                await asyncio.sleep(delay_s)
                writer.write(chunk)
                await writer.drain()

        async def proxy_later() -> None:
            await asyncio.sleep(2.0)  # the connect's time: inside the timeout by itself
            ns_host, ns_port = namesrv.address.rsplit(":", 1)
            while True:
                sock, _ = await loop.sock_accept(listener)
                client_reader, client_writer = await asyncio.open_connection(sock=sock)
                ns_reader, ns_writer = await asyncio.open_connection(ns_host, int(ns_port))
                writers.extend((client_writer, ns_writer))
                tasks.append(loop.create_task(pipe(client_reader, ns_writer, 0.0)))
                tasks.append(loop.create_task(pipe(ns_reader, client_writer, 1.8)))

        tasks.append(loop.create_task(proxy_later()))
        registrar = _registrar([addr], timeout_s=3.0)
        try:
            await registrar.register_all()
            await eventually(lambda: addr in registrar.registered, 10, "the registration to end")
            await eventually(lambda: "broker-a" in namesrv.routes.brokers, 10, "the name server to take it")
            # with a whole timeout after the connect, the answer came in time and it counted as registered
            assert registrar.registered == {addr: False}
        finally:
            for task in tasks:
                task.cancel()
            await registrar.close(unregister=False)
            for writer in writers:
                writer.close()
            filler.close()
            listener.close()
            await namesrv.close()

    run_within(go, 30)


def test_a_round_is_not_held_by_a_registration_waiting_behind_an_unanswered_one() -> None:
    """4.9.3's registerBrokerAll waits for the name servers' answers for registerBrokerTimeoutMills
    (CountDownLatch.await) and goes on with those it has.  Here a registration waiting behind an earlier one
    to a name server that never answers held its round until the earlier one had timed out.  The earlier
    round is sent with a 60 s timeout, the later one with 1 s: the later round ends, with the answering name
    server's registration in, while the earlier one still waits."""
    async def go() -> None:
        loop = asyncio.get_running_loop()
        frames = asyncio.Queue[bytes]()
        silent_writers: list[asyncio.StreamWriter] = []

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            silent_writers.append(writer)
            while chunk := await reader.read(65536):
                frames.put_nowait(chunk)
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        answering = await _namesrv()
        host, port = server.sockets[0].getsockname()[:2]
        silent_addr = f"{host}:{port}"
        registrar = _registrar([silent_addr, answering.address], timeout_s=60.0)
        first = loop.create_task(registrar.register_all())
        try:
            await frames.get()  # the first registration is in flight at the silent name server
            registrar.timeout_s = 1.0
            await registrar.register_all()  # its registration there waits behind the first one
            assert not first.done(), "the round waited for the earlier registration"
            assert registrar.registered[answering.address] is True
            assert "broker-a" in answering.routes.brokers
        finally:
            for writer in silent_writers:
                writer.close()  # the earlier registration ends: its connection is gone
            await asyncio.wait([first], timeout=10)
            await registrar.close(unregister=False)
            await answering.close()
            server.close()
            await server.wait_closed()

    run_within(go, 30)


def test_a_slave_takes_its_master_and_order_topics_from_one_answer() -> None:
    """4.9.3's doRegisterBrokerAll takes the HA address, the master's address and the ORDER_TOPIC_CONFIG table
    all from one name server's answer (the first in its result list).  Here the master's addresses followed
    whichever name server answered last while the table came from the first accepting one; now all three come
    from the first accepting name server in the configured order."""
    async def go() -> None:
        knows_master, knows_nothing = await _namesrv(), await _namesrv()
        master = _registrar([knows_master.address])
        slaves: list[Registrar] = []
        try:
            await master.register_all()
            async with AdminClient(knows_nothing.address) as admin:
                await admin.put_kv(ORDER_TOPIC_CONFIG, "orders", "broker-a:4")

            seen_ab: list[dict[str, str]] = []
            slave_ab = _registrar([knows_master.address, knows_nothing.address], broker_id=1, seen=seen_ab)
            seen_ba: list[dict[str, str]] = []
            slave_ba = _registrar([knows_nothing.address, knows_master.address], broker_id=1, seen=seen_ba)
            slaves += [slave_ab, slave_ba]
            for _ in range(3):
                await slave_ab.register_all()
                assert slave_ab.master_addr == "127.0.0.1:10911"
                assert slave_ab.master_ha_addr == "127.0.0.1:10912"
                assert seen_ab == []  # the name server that knows the master has no order table
                await slave_ba.register_all()
                assert (slave_ba.master_addr, slave_ba.master_ha_addr) == (None, None)
                assert seen_ba[-1] == {"orders": "broker-a:4"}
        finally:
            for registrar in (*slaves, master):
                await registrar.close(unregister=False)
            await knows_master.close()
            await knows_nothing.close()

    run_within(go, 30)


def test_a_big_compressed_registration_is_taken_whole() -> None:
    """A compressed registration (compressedRegister) of 3,000 topics is ~8 KB on the wire, past the size that
    is now decoded off the name server's loop; the name server answers every topic's route from it, and a
    change of one topic registered the same way shows in that topic's route only."""
    async def go() -> None:
        namesrv = await _namesrv()
        configs = {f"Big{i}": TopicConfig(f"Big{i}", 4, 4, 6) for i in range(3000)}
        version = [1]
        registrar = Registrar([namesrv.address], cluster_name="DefaultCluster", broker_name="broker-a",
                              broker_id=0, broker_addr="127.0.0.1:10911", ha_server_addr="127.0.0.1:10912",
                              body=lambda: RegisterBrokerBody(dict(configs), DataVersion(1, version[0])),
                              period_s=600, compressed=True)
        try:
            assert len(RegisterBrokerBody(configs, DataVersion()).encode_compressed()) > 2 * 1024
            await registrar.register_all()
            assert registrar.registered[namesrv.address] is True
            assert namesrv.routes.topics() == sorted(configs)
            configs["Big7"] = TopicConfig("Big7", 2, 3, 4)
            version[0] += 1
            await registrar.register_all()
            route = namesrv.routes.route("Big7")
            assert route is not None
            assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [(2, 3, 4)]
            route = namesrv.routes.route("Big8")
            assert route is not None
            assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [(4, 4, 6)]
        finally:
            await registrar.close(unregister=False)
            await namesrv.close()

    run_within(go, 30)
