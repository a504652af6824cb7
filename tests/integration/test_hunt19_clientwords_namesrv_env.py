"""A client given no name server address takes it from the environment variable NAMESRV_ADDR, as 4.9.3's
Java clients (ClientConfig's namesrvAddr defaults to NameServerAddressUtils.getNameServerAddresses()) and
mqadmin (no -n: DefaultMQAdminExt's ClientConfig reads it); an address given wins, and without either the
error stays 4.9.3's "No name server address, please set it.".  The CLI's --namesrv default is
$ROCKETSTORE_NAMESRV, else $NAMESRV_ADDR, else 127.0.0.1:9876; ``rocketstore broker`` without -n nor namesrvAddr
in its file registers with $NAMESRV_ADDR, as mqbroker.  A real name server and broker on 127.0.0.1."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster
from test_serve_cli import ADDR, first_line, round_trip, start, stop

from rocketstore.cli.main import main
from rocketstore.client import BlockingProducer, LitePullConsumer, Producer, PullConsumer, PushConsumer
from rocketstore.client.admin import AdminClient
from rocketstore.client.push_types import ConsumeStatus
from rocketstore.remoting.transport import run

TOPIC = "Hunt19WordsEnv"
NO_ADDRESS = "No name server address, please set it. See http://rocketmq.apache.org/docs/faq/ for further details."


def _closed_port_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 2)
        yield c


def test_clients_without_an_address_use_namesrv_addr(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv_addr)

    async def go() -> tuple[str, str, list[str], str]:
        async with Producer(group="hunt19-words-env") as producer:
            sent = await producer.send(TOPIC, b"from the environment")
        async with AdminClient() as admin:
            brokers = sorted(bd.broker_name for bd in (await admin.route(TOPIC)).broker_datas)
        async with PullConsumer(None, "hunt19-words-env-pull") as puller:
            queues = await puller.queues(TOPIC)
        consumer = PushConsumer(None, "hunt19-words-env-push", {TOPIC: "*"},
                                lambda messages: ConsumeStatus.CONSUME_SUCCESS)
        lite = LitePullConsumer(None, "hunt19-words-env-lite")
        lite.assign(queues)
        async with lite:
            polled = await lite.poll(5.0)
        assert [m.body for m in polled] == [b"from the environment"]
        return sent.status, consumer.namesrv_addr, brokers, str(len(queues))

    status, push_addr, brokers, queue_count = cluster.run(go())
    assert status == "SEND_OK"
    assert push_addr == cluster.namesrv_addr  # what its running info reports (PROP_NAMESERVER_ADDR)
    assert brokers == ["broker-a"] and queue_count == "2"
    with BlockingProducer(group="hunt19-words-env-blocking") as blocking:
        assert blocking.send(TOPIC, b"blocking").status == "SEND_OK"


def test_an_address_given_wins_over_namesrv_addr(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", _closed_port_addr())

    async def go() -> str:
        async with Producer(cluster.namesrv_addr, "hunt19-words-given", retry_times=0) as producer:
            return (await producer.send(TOPIC, b"given")).status

    assert cluster.run(go()) == "SEND_OK"


def test_without_address_and_environment_the_error_stays_please_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    for make in (lambda: Producer(), lambda: Producer(None, "g"), lambda: AdminClient(),
                 lambda: PullConsumer(None, "g"), lambda: LitePullConsumer(None, "g"),
                 lambda: BlockingProducer(group="g")):
        with pytest.raises(ValueError) as caught:
            make()
        assert str(caught.value) == NO_ADDRESS
    # an address given is used as given, even an empty one: NAMESRV_ADDR is not read then
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:9876")
    with pytest.raises(ValueError) as caught:
        Producer("", "g")
    assert str(caught.value) == NO_ADDRESS


def test_the_cli_reads_namesrv_addr_without_namesrv(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ROCKETSTORE_NAMESRV", raising=False)
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv_addr)
    assert main(["topic", "status", TOPIC, "--json"]) == 0, capsys.readouterr().err
    assert "broker-a" in capsys.readouterr().out
    # ROCKETSTORE_NAMESRV (ours) comes first, then NAMESRV_ADDR
    monkeypatch.setenv("ROCKETSTORE_NAMESRV", cluster.namesrv_addr)
    monkeypatch.setenv("NAMESRV_ADDR", _closed_port_addr())
    assert main(["topic", "status", TOPIC, "--json"]) == 0, capsys.readouterr().err
    assert "broker-a" in capsys.readouterr().out


def test_a_broker_without_n_or_namesrv_addr_in_its_file_registers_with_namesrv_addr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rocketstore broker -c broker.conf`` as mqbroker: 4.9.3's BrokerConfig.namesrvAddr defaults to
    NAMESRV_ADDR (the way RocketMQ's docker images point a broker at its name server)."""
    namesrv = start("namesrv", "--port", "0")
    broker = None
    try:
        namesrv_addr = ADDR.findall(first_line(namesrv))[0]
        conf = tmp_path / "broker.conf"
        conf.write_text(f"brokerName = broker-env\nlistenPort = 0\nbrokerIP1 = 127.0.0.1\n"
                        f"storePathRootDir = {tmp_path / 'bstore'}\nmappedFileSizeCommitLog = 1048576\n"
                        f"autoCreateTopicEnable = true\n", encoding="utf-8")
        monkeypatch.setenv("NAMESRV_ADDR", namesrv_addr)
        broker = start("broker", "-c", str(conf))
        line = first_line(broker)
        assert f"name servers {namesrv_addr})" in line, line
        run(round_trip(namesrv_addr))
    finally:
        if broker is not None:
            assert stop(broker) == 0
        assert stop(namesrv) == 0
