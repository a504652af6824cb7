"""The name server's own files and settings: the KV table in kvConfigPath (kept across restarts, as 4.9.3's
KVConfigManager does), GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG (persisted to configStorePath, refusing
what may not change), orderMessageEnable taking effect at once, and ``rocketstore namesrv -c`` as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from local_cluster import LocalCluster
from serve_process import cli, env

from rocketstore.client import Producer
from rocketstore.client.admin import AdminClient
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.namesrv import NameServer, NamesrvConfig, NamesrvConfigError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.headers import GetKVConfigRequestHeader, PutKVConfigRequestHeader
from rocketstore.remoting.transport import ConnectionPool, run

T = TypeVar("T")


def config_in(directory: Path) -> NamesrvConfig:
    return NamesrvConfig(kv_config_path=str(directory / "kvConfig.json"),
                         config_store_path=str(directory / "namesrv.properties"))


def with_namesrv(config: NamesrvConfig | None, fn: Callable[[NameServer, ConnectionPool], Awaitable[T]]) -> T:
    async def go() -> T:
        namesrv = NameServer(config)
        await namesrv.start("127.0.0.1", 0)
        pool = ConnectionPool()
        try:
            return await fn(namesrv, pool)
        finally:
            await pool.close()
            await namesrv.close()

    return run(go())


async def call(pool: ConnectionPool, namesrv: NameServer, code: int, ext: dict[str, str] | None = None,
               body: bytes = b"") -> RemotingCommand:
    return await pool.request(namesrv.address, RemotingCommand.request(code, ext or {}, body), 10)


async def put_kv(pool: ConnectionPool, namesrv: NameServer, namespace: str, key: str, value: str) -> None:
    ext = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value).to_ext_fields()
    assert (await call(pool, namesrv, RequestCode.PUT_KV_CONFIG, ext)).code == ResponseCode.SUCCESS


async def get_kv(pool: ConnectionPool, namesrv: NameServer, namespace: str, key: str) -> str | None:
    ext = GetKVConfigRequestHeader(namespace=namespace, key=key).to_ext_fields()
    response = await call(pool, namesrv, RequestCode.GET_KV_CONFIG, ext)
    return response.ext_fields.get("value") if response.code == ResponseCode.SUCCESS else None


def test_the_kv_table_is_written_on_every_change_and_read_at_start(tmp_path: Path) -> None:
    config = config_in(tmp_path)

    async def first(namesrv: NameServer, pool: ConnectionPool) -> None:
        await put_kv(pool, namesrv, "ORDER_TOPIC_CONFIG", "OrderTopic", "broker-a:4")
        await put_kv(pool, namesrv, "ns2", "k", "v")
        await put_kv(pool, namesrv, "ns2", "gone", "soon")
        ext = {"namespace": "ns2", "key": "gone"}
        assert (await call(pool, namesrv, RequestCode.DELETE_KV_CONFIG, ext)).code == ResponseCode.SUCCESS

    with_namesrv(config, first)
    on_disk = json.loads((tmp_path / "kvConfig.json").read_text())
    assert on_disk == {"configTable": {"ORDER_TOPIC_CONFIG": {"OrderTopic": "broker-a:4"}, "ns2": {"k": "v"}}}

    async def second(namesrv: NameServer, pool: ConnectionPool) -> tuple[str | None, str | None, str | None]:
        return (await get_kv(pool, namesrv, "ORDER_TOPIC_CONFIG", "OrderTopic"), await get_kv(pool, namesrv, "ns2", "k"),
                await get_kv(pool, namesrv, "ns2", "gone"))

    assert with_namesrv(config, second) == ("broker-a:4", "v", None)


def test_a_name_server_without_config_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))

    async def go(namesrv: NameServer, pool: ConnectionPool) -> None:
        await put_kv(pool, namesrv, "ns", "k", "v")

    with_namesrv(None, go)
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_kv_file_falls_back_to_its_backup_and_two_damaged_ones_refuse_to_start(tmp_path: Path) -> None:
    config = config_in(tmp_path)

    async def two_puts(namesrv: NameServer, pool: ConnectionPool) -> None:
        await put_kv(pool, namesrv, "ns", "k", "first")
        await put_kv(pool, namesrv, "ns", "k", "second")  # the first version is now kvConfig.json.bak

    with_namesrv(config, two_puts)
    (tmp_path / "kvConfig.json").write_text('{"configTable": {"ns": ')  # torn
    assert NameServer(config).kv.get("ns", "k") == "first"
    (tmp_path / "kvConfig.json.bak").write_text("not json")
    with pytest.raises(NamesrvConfigError, match="cannot read the KV table"):
        NameServer(config)


def test_get_and_update_namesrv_config(tmp_path: Path) -> None:
    config = config_in(tmp_path)

    async def go(namesrv: NameServer, pool: ConnectionPool) -> list[RemotingCommand]:
        await put_kv(pool, namesrv, "ORDER_TOPIC_CONFIG", "OrderTopic", "broker-a:4")
        before = await call(pool, namesrv, RequestCode.GET_NAMESRV_CONFIG)
        refused = [await call(pool, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=body) for body in (
            b"noSuchSetting=1", b"kvConfigPath=/etc/passwd", b"configStorePath=/tmp/x", b"orderMessageEnable=yes",
            b"listenPort=1")]
        assert namesrv.config.order_message_enable is False
        assert not (tmp_path / "namesrv.properties").exists(), "a refused update writes nothing"
        updated = await call(pool, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG,
                             body=b"orderMessageEnable=true\nproductEnvName=eu-1\n")
        after = await call(pool, namesrv, RequestCode.GET_NAMESRV_CONFIG)
        return [before, *refused, updated, after]

    before, *refused, updated, after = with_namesrv(config, go)
    settings = parse_properties_text(before.body.decode())
    assert settings["kvConfigPath"] == str(tmp_path / "kvConfig.json")
    assert (settings["orderMessageEnable"], settings["productEnvName"], settings["clusterTest"]) == \
        ("false", "center", "false")
    for answer in refused:
        assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("updateConfig refused")
    assert updated.code == ResponseCode.SUCCESS
    now = parse_properties_text(after.body.decode())
    assert (now["orderMessageEnable"], now["productEnvName"]) == ("true", "eu-1")
    assert parse_properties_text((tmp_path / "namesrv.properties").read_text()) == now


def test_namesrv_command_reads_its_config_file_and_keeps_the_kv_table(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"kvConfigPath={tmp_path / 'kv' / 'kvConfig.json'}\nconfigStorePath={tmp_path / 'ns.properties'}\n"
                    "serverWorkerThreads=8\norderMessageEnable=true\n")

    def start() -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen([sys.executable, "-m", "rocketstore.cli.main", "namesrv", "-c", str(conf),
                                    "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=env())
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("name server listening on "), (line, process.stderr and process.stderr.read())
        return process, line.split()[-1]

    async def put_and_get(address: str, value: str | None) -> tuple[str | None, str]:
        pool = ConnectionPool()
        try:
            if value is not None:
                ext = PutKVConfigRequestHeader(namespace="ns", key="k", value=value).to_ext_fields()
                put = await pool.request(address, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, ext), 10)
                assert put.code == ResponseCode.SUCCESS
            ext = GetKVConfigRequestHeader(namespace="ns", key="k").to_ext_fields()
            got = await pool.request(address, RemotingCommand.request(RequestCode.GET_KV_CONFIG, ext), 10)
            settings = await pool.request(address, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG, {}), 10)
            return got.ext_fields.get("value"), settings.body.decode()
        finally:
            await pool.close()

    for value, expected in (("v1", "v1"), (None, "v1")):  # the second process finds what the first kept
        process, address = start()
        try:
            got, settings = run(put_and_get(address, value))
            assert got == expected
            assert "orderMessageEnable=true" in settings.splitlines()
        finally:
            process.kill()  # kill -9: the table was on disk since the put
            process.wait()

    bad = tmp_path / "bad.conf"
    bad.write_text("orderMessageEnable=maybe\n")
    out = subprocess.run([sys.executable, "-m", "rocketstore.cli.main", "namesrv", "-c", str(bad), "--port", "0"],
                         capture_output=True, text=True, env=env(), timeout=60, check=False)
    # exit 2 as broker and serve give for a bad config (the one-line error of main's handler)
    assert out.returncode == 2 and out.stderr.startswith("rocketstore: error: orderMessageEnable"), out.stderr


def test_cli_namesrv_config_and_kv_commands(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        ns = ("--namesrv", cluster.namesrv_addr)
        assert cli("kv", "put", "ORDER_TOPIC_CONFIG", "OrderTopic", "broker-a:4", *ns).returncode == 0
        got = cli("kv", "get", "ORDER_TOPIC_CONFIG", "OrderTopic", *ns)
        assert (got.returncode, got.stdout.strip()) == (0, "broker-a:4")
        assert cli("kv", "delete", "ORDER_TOPIC_CONFIG", "OrderTopic", *ns).returncode == 0
        missing = cli("kv", "get", "ORDER_TOPIC_CONFIG", "OrderTopic", *ns)
        assert missing.returncode == 1 and missing.stderr.startswith("rocketstore: error: no value")

        changed = cli("namesrv-config", "set", "orderMessageEnable=true", *ns)
        assert changed.returncode == 0, changed.stderr
        settings = json.loads(cli("namesrv-config", "get", "--json", *ns).stdout)
        assert settings[cluster.namesrv_addr]["orderMessageEnable"] == "true"
        assert cluster.namesrv.config.order_message_enable is True
        refused = cli("namesrv-config", "set", "kvConfigPath=/tmp/elsewhere", *ns)
        assert refused.returncode == 1 and "cannot be changed at run time" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_an_ordered_topic_created_on_the_cluster_gets_its_order_config_on_the_name_servers(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        async def go() -> tuple[list[str], str | None]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                written = await admin.create_topic("OrderedTopic", cluster="DefaultCluster", read_queue_nums=4,
                                                   write_queue_nums=4, order=True)
                return written, await admin.get_kv("ORDER_TOPIC_CONFIG", "OrderedTopic")

        written, conf = run(go())
        assert written == [cluster.broker_addr]
        assert conf == f"{cluster.broker_name}:4"


def test_a_producer_sends_ordered_messages_only_to_the_queues_the_order_config_names(tmp_path: Path) -> None:
    """With orderMessageEnable the route carries the topic's order config, and a producer sends to the
    queues it names (here 2 of the topic's 4), as Java's producer does."""
    topic = "OrderConfTopic"
    with LocalCluster(tmp_path / "store") as cluster:
        async def prepare() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_namesrv_config({"orderMessageEnable": "true"})
                await admin.put_kv("ORDER_TOPIC_CONFIG", topic, f"{cluster.broker_name}:2")

        async def send() -> set[int]:
            async with Producer(cluster.namesrv_addr, "order-conf-producer") as producer:
                results = [await producer.send_orderly(topic, b"m", key) for key in range(40)]
            return {r.message_queue.queue_id for r in results}

        cluster.create_topic(topic, queues=4)
        run(prepare())
        assert run(send()) == {0, 1}
