"""The name server address server: a client given no name server address (and no NAMESRV_ADDR) reads the
list over HTTP, as 4.9.3's MQClientAPIImpl.fetchNameServerAddr (TopAddressing), and a broker with
fetchNamesrvAddrByAddressServer=true and no namesrvAddr, as 4.9.3's BrokerController.

Captured from 4.9.3 (a Java producer with -Drocketmq.namesrv.domain=127.0.0.1:<port> and no namesrvAddr; a
Java broker with fetchNamesrvAddrByAddressServer=true, rmqAddressServerDomain, rmqAddressServerSubGroup):
GET http://<domain>/rocketmq/<subgroup> (``nsaddr`` by default; ``<domain>:8080`` when the domain has no
port); the 200 answer's first line, trimmed, is the list (``a;b``); a 404 or a refused fetch keeps the list;
a changed list is followed at the next fetch (at start, 10 s later, then every 2 minutes).  4.9.3 takes an
empty 200 answer as the list [""] and can reach no name server after it; here it keeps the list."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import SMALL_STORE, LocalCluster

from rocketstore import address_server
from rocketstore.address_server import address_server_url
from rocketstore.broker.broker import Broker
from rocketstore.broker.config import BrokerConfig
from rocketstore.client import ConsumeFromWhere, ConsumeStatus, Producer, PullConsumer, PushConsumer
from rocketstore.namesrv.server import NameServer
from rocketstore.remoting.consumer_bodies import ConsumerRunningInfo
from rocketstore.store.config import StoreConfig

TOPIC = "Hunt27AddrSrv"


class AddressServer:
    """An HTTP address server on port 0: answers *code* and *body*, keeps the paths asked."""

    def __init__(self) -> None:
        self.code, self.body = 200, ""
        self.paths: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner.paths.append(self.path)
                data = owner.body.encode()
                self.send_response(owner.code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.domain = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web() -> Iterator[AddressServer]:
    server = AddressServer()
    yield server
    server.close()


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.delenv(address_server.NAMESRV_DOMAIN_ENV, raising=False)
    monkeypatch.delenv(address_server.NAMESRV_DOMAIN_SUBGROUP_ENV, raising=False)
    monkeypatch.setattr(address_server, "FIRST_PERIOD_S", 0.05)
    monkeypatch.setattr(address_server, "PERIOD_S", 0.05)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path / "store", namesrv_count=2) as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_url_as_4_9_3_builds_it() -> None:
    assert address_server_url() == "http://jmenv.tbsite.net:8080/rocketmq/nsaddr"
    assert address_server_url("ns.example") == "http://ns.example:8080/rocketmq/nsaddr"
    assert address_server_url("127.0.0.1:8081", "grp") == "http://127.0.0.1:8081/rocketmq/grp"
    assert address_server_url("h:1", None, "unit1") == "http://h:1/rocketmq/nsaddr-unit1?nofix=1"


def test_client_follows_the_address_server(cluster: LocalCluster, web: AddressServer, fast: None) -> None:
    ns1, ns2 = (n.address for n in cluster.namesrvs)
    web.body = f"  {ns1}  \nignored second line\n"

    async def wait_asked(more: int) -> None:
        target = len(web.paths) + more
        while len(web.paths) < target:
            await asyncio.sleep(0.02)

    async def go() -> list[Any]:
        seen: list[Any] = []
        async with Producer(group="hunt27-addrsrv", namesrv_domain=web.domain) as producer:
            seen.append((await producer.send(TOPIC, b"one")).status)
            seen.append(producer.routes.namesrv_addrs)
            web.body = f"{ns2};{ns1}"  # a new list: followed
            while set(producer.routes.namesrv_addrs) != {ns1, ns2}:
                await asyncio.sleep(0.02)
            web.body = ns2
            while producer.routes.namesrv_addrs != [ns2]:
                await asyncio.sleep(0.02)
            web.body = ""  # an empty answer keeps the list (4.9.3 empties it)
            await wait_asked(2)
            seen.append(producer.routes.namesrv_addrs)
            web.code, web.body = 404, ns1  # an error keeps it too
            await wait_asked(2)
            seen.append(producer.routes.namesrv_addrs)
            producer.routes.expire()
            seen.append((await producer.send(TOPIC, b"two")).status)
        return seen

    assert cluster.run(go()) == ["SEND_OK", [ns1], [ns2], [ns2], "SEND_OK"]
    assert set(web.paths) == {"/rocketmq/nsaddr"}


def test_consumer_from_the_environment(cluster: LocalCluster, web: AddressServer, fast: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_ENV, web.domain)
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_SUBGROUP_ENV, "grp1")
    web.body = cluster.namesrv_addr

    async def go() -> int:
        async with PullConsumer(None, "hunt27-addrsrv-pull") as consumer:
            return len(await consumer.queues(TOPIC))

    assert cluster.run(go()) == 2
    assert web.paths[0] == "/rocketmq/grp1"


def test_no_answer_at_start_says_no_name_server(cluster: LocalCluster, web: AddressServer,
                                                fast: None) -> None:
    web.code = 404

    async def go() -> str:
        async with Producer(group="hunt27-addrsrv-none", namesrv_domain=web.domain) as producer:
            try:
                await producer.send(TOPIC, b"nowhere")
            except Exception as exc:  # noqa: BLE001
                return str(exc)
        return "sent"

    assert "No name server address, please set it." in cluster.run(go())


def test_broker_registers_where_the_address_server_says(tmp_path: Path, web: AddressServer,
                                                        fast: None) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        ns1 = cluster.namesrv
        web.body = ns1.address

        async def start_broker() -> tuple[Broker, NameServer]:
            config = BrokerConfig(broker_name="hunt27-addrsrv-b", listen_port=0, listen_host="127.0.0.1",
                                  broker_ip1="127.0.0.1")
            broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "b"), **SMALL_STORE),
                            properties={"fetchNamesrvAddrByAddressServer": "true",
                                        "rmqAddressServerDomain": web.domain,
                                        "rmqAddressServerSubGroup": "brk"})
            await broker.start()
            ns2 = NameServer()
            await ns2.start("127.0.0.1", 0)
            return broker, ns2

        broker, ns2 = cluster.run(start_broker())
        try:
            def names(ns: NameServer) -> set[str]:
                route = ns.routes.route("TBW102")
                return {bd.broker_name for bd in route.broker_datas} if route is not None else set()

            cluster.wait_until(lambda: "hunt27-addrsrv-b" in names(ns1), 10, "registration with ns1")
            web.body = ns2.address  # the list changes: the broker registers with the new name server
            cluster.wait_until(lambda: "hunt27-addrsrv-b" in names(ns2), 10, "registration with ns2")
            assert web.paths[0] == "/rocketmq/brk"
        finally:
            cluster.run(broker.close())
            cluster.run(ns2.close())


def test_a_traced_producer_sends_its_trace_through_the_same_address_server(
        cluster: LocalCluster, web: AddressServer, fast: None) -> None:
    web.body = cluster.namesrv_addr

    async def go() -> int:
        async with Producer(group="hunt27-addrsrv-trace", namesrv_domain=web.domain, enable_trace=True) as producer:
            assert (await producer.send(TOPIC, b"traced")).status == "SEND_OK"
            assert producer.trace is not None
            dispatcher = producer.trace.dispatcher
            while dispatcher.sent_messages < 1 and dispatcher.failed_sends == 0:
                await asyncio.sleep(0.02)
            return dispatcher.sent_messages

    assert cluster.run(go(), timeout_s=30) == 1


def test_a_push_consumer_given_the_address_server_consumes(cluster: LocalCluster, web: AddressServer,
                                                          fast: None) -> None:
    web.body = cluster.namesrv_addr
    got: list[bytes] = []

    async def handle(messages: list[Any]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt27-addrsrv-push-p") as producer:
            assert (await producer.send(TOPIC, b"pushed")).status == "SEND_OK"
        async with PushConsumer(None, "hunt27-addrsrv-push", {TOPIC: "*"}, handle, namesrv_domain=web.domain,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                enable_trace=True) as consumer:
            while not got:
                await asyncio.sleep(0.02)
            assert consumer.consumer.routes.namesrv_addrs == [cluster.namesrv_addr]
            info = consumer.running_info()
            assert info.properties[ConsumerRunningInfo.PROP_NAMESERVER_ADDR] == f"{cluster.namesrv_addr};"

    cluster.run(go(), timeout_s=30)
    assert got == [b"pushed"]


@pytest.mark.parametrize("answer", [b"SSH-2.0-OpenSSH_9.2\r\n",
                                    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n127.0.0.1:9876"])
def test_an_answer_that_is_not_http_reads_as_none(answer: bytes) -> None:
    # (a name server's port given as the domain, a peer cutting its answer short) 4.9.3 logs the IOException
    # and keeps its list; here it raised http.client's BadStatusLine / IncompleteRead into the user's send
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(answer)

    thread = threading.Thread(target=answer_once, daemon=True)
    thread.start()
    try:
        url = address_server_url(f"127.0.0.1:{listener.getsockname()[1]}")
        assert address_server.fetch_namesrv_addr(url, timeout_s=5) is None
    finally:
        thread.join(5)
        listener.close()
