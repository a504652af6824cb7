"""A name server and a broker on ::1, driven by the CLI and the Python client as a user would: every record the
broker writes has IPv6 born and store hosts (sysFlag 0x30), so its offset message id is 56 hex characters and
names the broker as ``[0:0:0:0:0:0:0:1]:PORT``, while the broker registers itself as ``[::1]:PORT``.  Then
``rocketstore serve --host`` with a wildcard (0.0.0.0, ::): what it advertises and which clients it takes.

The IPv6 tests are skipped when this machine cannot bind ::1."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_calls import ok_json
from local_cluster import LocalCluster
from serve_process import cli, env, write_broker_conf

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.config import local_ip
from rocketstore.namesrv import NameServer
from rocketstore.store.config import StoreConfig


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


needs_v6 = pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")


class V6Cluster(LocalCluster):
    """LocalCluster with the name server and the broker listening on ::1 (brokerIP1 ::1)."""

    async def _start(self) -> None:
        self.namesrv = NameServer(tls=self.tls)
        await self.namesrv.start("::1", 0)
        config = BrokerConfig(broker_name=self.broker_name, namesrv_addr=self.namesrv.address, listen_port=0,
                              listen_host="::1", broker_ip1="::1", **self.broker_overrides)
        self.broker = Broker(config, StoreConfig(store_path_root_dir=self.store_dir, **self.store_overrides),
                             tls=self.tls)
        await self.broker.start()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with V6Cluster(tmp_path_factory.mktemp("hunt14-ipv6") / "store") as c:
        c.create_topic("V6T", queues=2)
        yield c


def _send(capsys: pytest.CaptureFixture[str], cluster: LocalCluster, key: str) -> dict[str, Any]:
    sent = ok_json(capsys, cluster, "send", "V6T", f"body of {key}", "--keys", key, "--json")
    result = sent[0] if isinstance(sent, list) else sent
    assert result["status"] == "SEND_OK", result
    return dict(result)


@needs_v6
def test_message_query_by_an_ipv6_offset_message_id(cluster: LocalCluster,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """mqadmin queryMsgById decodes the id and asks the broker it names; the id's host text
    ([0:0:0:0:0:0:0:1]:PORT) is the registered [::1]:PORT, so no topic is needed."""
    result = _send(capsys, cluster, "v6-by-id")
    offset_id = result["offsetMsgId"]
    assert len(offset_id) == 56  # 16-byte IP + port + offset
    found = ok_json(capsys, cluster, "message", "query", "--id", offset_id, "--json")
    assert [m["body"] for m in found] == ["body of v6-by-id"]
    assert found[0]["sysFlag"] & 0x30 == 0x30
    assert found[0]["offsetMsgId"] == offset_id


FIRST_LINE = re.compile(r"name server listening on (\S+); broker \S+ listening on (\S+) \(store [^)]*\)"
                        r"(?:; metrics on (\S+))?")


class WildcardServe:
    """``rocketstore serve --host HOST`` in a subprocess, its first line parsed."""

    def __init__(self, tmp_path: Path, host: str) -> None:
        conf = write_broker_conf(tmp_path / "broker.conf")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketstore.cli.main", "serve", "--store", str(tmp_path / "store"), "-c",
             str(conf), "--host", host, "--namesrv-port", "0", "--broker-port", "0", "--metrics-port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = FIRST_LINE.search(line)
        if found is None:
            self.close()
            raise AssertionError(f"serve said {line!r}; stderr: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.namesrv_port = int(found.group(1).rsplit(":", 1)[1])
        self.broker_addr = found.group(2)
        self.metrics_url = found.group(3)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _cli_json(*args: str) -> Any:
    done = cli(*args, "--json", timeout_s=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("host", ["0.0.0.0", pytest.param("::", marks=needs_v6)])
def test_serve_on_a_wildcard_advertises_this_hosts_address(tmp_path: Path, host: str) -> None:
    """A wildcard is where to listen, not an address a client can reach: the broker registers and stamps as
    STOREHOST this host's address (4.9.3's brokerIP1 default), not 0.0.0.0 / [::]; the metrics URL printed
    is a valid URL."""
    serve = WildcardServe(tmp_path, host)
    try:
        port = int(serve.broker_addr.rsplit(":", 1)[1])
        assert serve.broker_addr == f"{local_ip()}:{port}"
        assert serve.metrics_url is not None and re.fullmatch(
            r"http://(0\.0\.0\.0|\[::\]):\d+/metrics", serve.metrics_url), serve.metrics_url
        sent = _cli_json("send", "-n", f"127.0.0.1:{serve.namesrv_port}", "WildTopic", "w")
        assert sent[0]["status"] == "SEND_OK"
        found = _cli_json("message", "query", "-n", f"127.0.0.1:{serve.namesrv_port}", "--id",
                          sent[0]["offsetMsgId"])
        assert found[0]["storeHost"] == f"{local_ip()}:{port}"
        assert found[0]["sysFlag"] & 0x30 == 0 and "[" not in found[0]["bornHost"]  # IPv4 hosts, 4 bytes each
    finally:
        serve.close()


@needs_v6
def test_serve_on_the_ipv6_wildcard_takes_ipv4_and_ipv6_clients(tmp_path: Path) -> None:
    """``--host ::`` listens on every IPv6 and IPv4 address, as 4.9.3's wildcard bind does: the name server
    answers over IPv4 and IPv6, and the broker (advertised at this host's IPv4 address) takes the sends, its
    IPv4 peers stored as 4-byte born hosts, not as IPv4-mapped IPv6 ones."""
    serve = WildcardServe(tmp_path, "::")
    try:
        ids = []
        for namesrv in (f"127.0.0.1:{serve.namesrv_port}", f"[::1]:{serve.namesrv_port}"):
            sent = _cli_json("send", "-n", namesrv, "DualTopic", namesrv)
            assert sent[0]["status"] == "SEND_OK", namesrv
            ids.append(sent[0]["offsetMsgId"])
        found = [_cli_json("message", "query", "-n", f"[::1]:{serve.namesrv_port}", "--id", i)[0] for i in ids]
        for message in found:
            assert "[" not in message["bornHost"] and message["sysFlag"] & 0x10 == 0, message
    finally:
        serve.close()
