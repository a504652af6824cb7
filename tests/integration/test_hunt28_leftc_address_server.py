"""The name server address server, for the clients session 27 left out (test_hunt27_addrsrv_address_server):

- AdminClient: 4.9.3's DefaultMQAdminExt is a ClientConfig whose MQClientInstance reads the address server
  when given no name server address, as a producer's does; ours refused to be made without a list.
- a group consumer's unit name: 4.9.3's MQClientAPIImpl builds its TopAddressing with ClientConfig.unitName,
  which reads ``<subgroup>-<unit>?nofix=1`` (and puts ``@<unit>`` at the end of the client id); ours had no
  unit name for consumers.
- TransactionProducer and RequestProducer take namesrv_domain= / namesrv_domain_subgroup= as the Producer
  does (the variable only before), and with a unit name read the unit's list (their route cache, made again
  for their serving pool, had dropped the unit name).
- the ``rocketstore`` admin commands given no name server (no -n, ROCKETSTORE_NAMESRV or NAMESRV_ADDR) read
  the address server ROCKETMQ_NAMESRV_DOMAIN names, as mqadmin with -Drocketmq.namesrv.domain does; mqadmin
  has no option for it, and neither has ours."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster

from rocketstore import address_server
from rocketstore.cli.main import main
from rocketstore.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    LocalTransactionState,
    Producer,
    PullConsumer,
    PushConsumer,
    RequestProducer,
    TransactionProducer,
)
from rocketstore.client.admin import AdminClient

TOPIC = "Hunt28LeftcAddr"


class AddressServer:
    """An HTTP server on port 0 answering every GET with *body* (200); the paths asked, in order."""

    def __init__(self) -> None:
        self.body = ""
        self.paths: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.paths.append(self.path)
                data = owner.body.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.domain = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(Path(tmp_path_factory.mktemp("hunt28-leftc")) / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


@pytest.fixture
def web(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[AddressServer]:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.delenv(address_server.NAMESRV_DOMAIN_ENV, raising=False)
    monkeypatch.delenv(address_server.NAMESRV_DOMAIN_SUBGROUP_ENV, raising=False)
    server = AddressServer()
    server.body = cluster.namesrv_addr
    yield server
    server.close()


def test_admin_client_given_an_address_server(cluster: LocalCluster, web: AddressServer) -> None:
    async def go() -> tuple[list[str], list[str], bool, str | None]:
        async with AdminClient(namesrv_domain=web.domain, namesrv_domain_subgroup="adm") as admin:
            topics = await admin.topic_list()
            configs = await admin.namesrv_configs()
            route = await admin.route(TOPIC)
            await admin.put_kv("HUNT28_LEFTC", "k", "v")
            value = await admin.get_kv("HUNT28_LEFTC", "k")
            await admin.delete_kv("HUNT28_LEFTC", "k")
            return topics, sorted(configs), bool(route.queue_datas), value

    topics, configs, routed, value = cluster.run(go())
    assert TOPIC in topics
    assert configs == [cluster.namesrv_addr]
    assert routed and value == "v"
    assert set(web.paths) == {"/rocketmq/adm"}


def test_admin_client_from_the_environment_without_async_with(cluster: LocalCluster, web: AddressServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_ENV, web.domain)

    async def go() -> tuple[list[str], dict[str, dict[str, str]]]:
        admin = AdminClient()
        try:
            configs = await admin.namesrv_configs()  # a name-server call first: the list is read for it
            return list(admin.namesrv_addrs), configs
        finally:
            await admin.close()

    addrs, configs = cluster.run(go())
    assert addrs == [cluster.namesrv_addr] and list(configs) == addrs
    assert web.paths[0] == "/rocketmq/nsaddr"


def test_admin_client_with_neither_still_says_so(web: AddressServer) -> None:
    with pytest.raises(ValueError, match="No name server address"):
        AdminClient()


def test_group_consumers_read_their_units_list(cluster: LocalCluster, web: AddressServer) -> None:
    got: list[bytes] = []

    async def handle(messages: list[Any]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def go() -> tuple[str, str, int]:
        async with Producer(cluster.namesrv_addr, "hunt28-leftc-p") as producer:
            assert (await producer.send(TOPIC, b"to-unit")).status == "SEND_OK"
        async with PushConsumer(None, "hunt28-leftc-push", {TOPIC: "*"}, handle, namesrv_domain=web.domain,
                                unit_name="unitA", instance_name="inst1",
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) as consumer:
            while not got:
                await asyncio.sleep(0.02)
            client_id = consumer.client_id
            instance = consumer.running_info().properties["instanceName"]
        async with PullConsumer(None, "hunt28-leftc-pull", namesrv_domain=web.domain,
                                unit_name="unitB") as puller:
            queues = len(await puller.queues(TOPIC))
        return client_id, instance, queues

    client_id, instance, queues = cluster.run(go(), timeout_s=30)
    assert client_id.endswith("@inst1@unitA") and instance == "inst1"  # ClientConfig.buildMQClientId
    assert queues == 2 and got == [b"to-unit"]
    assert web.paths[0] == "/rocketmq/nsaddr-unitA?nofix=1"
    assert web.paths[-1] == "/rocketmq/nsaddr-unitB?nofix=1"


def test_transaction_and_request_producers_given_an_address_server(cluster: LocalCluster,
                                                                   web: AddressServer) -> None:
    def execute(message: Any, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check(message: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def go() -> list[str]:
        statuses = []
        async with TransactionProducer(None, "hunt28-leftc-tx", check, namesrv_domain=web.domain,
                                       namesrv_domain_subgroup="tx", unit_name="unitT") as producer:
            statuses.append(str((await producer.send_in_transaction(TOPIC, b"half", execute)).status))
        async with RequestProducer(None, "hunt28-leftc-rq", namesrv_domain=web.domain) as producer:
            statuses.append(str((await producer.send(TOPIC, b"plain")).status))
        return statuses

    assert cluster.run(go(), timeout_s=30) == ["SEND_OK", "SEND_OK"]
    assert web.paths[0] == "/rocketmq/tx-unitT?nofix=1"
    assert web.paths[-1] == "/rocketmq/nsaddr"


def test_a_transaction_producer_with_a_unit_reads_its_units_list(cluster: LocalCluster, web: AddressServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # the address server from the variable, which the transaction producer followed before, but not its unit
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_ENV, web.domain)

    def check(message: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def go() -> str:
        async with TransactionProducer(None, "hunt28-leftc-tx2", check, unit_name="unitE") as producer:
            return str((await producer.send_in_transaction(TOPIC, b"half", lambda m, a: check(m))).status)

    assert cluster.run(go(), timeout_s=30) == "SEND_OK"
    assert web.paths[0] == "/rocketmq/nsaddr-unitE?nofix=1"


def test_the_cli_follows_the_variable_when_given_no_name_server(cluster: LocalCluster, web: AddressServer,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # as mqadmin run with -Drocketmq.namesrv.domain and neither -n nor NAMESRV_ADDR (the default
    # 127.0.0.1:9876 was asked instead)
    monkeypatch.delenv("ROCKETSTORE_NAMESRV", raising=False)
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_ENV, web.domain)
    monkeypatch.setenv(address_server.NAMESRV_DOMAIN_SUBGROUP_ENV, "cli")
    assert main(["kv", "put", "HUNT28_LEFTC", "k", "v"]) == 0
    assert capsys.readouterr().out == f"put HUNT28_LEFTC k=v on {cluster.namesrv_addr}\n"
    assert web.paths == ["/rocketmq/cli"]
