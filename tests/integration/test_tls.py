"""TLS on the remoting protocol (4.9.3's tls.* settings): a name server and broker serving TLS in
permissive and enforcing mode, our clients over TLS, certificates checked when asked, and plain clients
(ours and the official C++ client) still served by a permissive broker.  Certificates are made with the
openssl command for each test module."""

from __future__ import annotations

import asyncio
import re
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from certs import self_signed
from cpp_driver import Runner, requires_cpp_client
from local_cluster import LocalCluster
from serve_process import ServeProcess, cli, write_broker_conf

from rocketstore.client import Producer, PullConsumer
from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig, TlsConfigError, TlsMode, use_client_tls
from rocketstore.remoting.transport import Connection, ConnectionPool, run

#: uvloop has its own TLS transport: every TLS path runs on both loops
pytestmark = pytest.mark.both_loops

TOPIC = "TlsTopic"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    directory = tmp_path_factory.mktemp("certs")
    return {name: self_signed(directory, name) for name in ("server", "client", "stranger")}


@pytest.fixture(autouse=True)
def plain_by_default() -> Iterator[None]:
    yield
    use_client_tls(None)  # a test that turned the process's client TLS on must not leak it


def _server_tls(certs: dict[str, tuple[str, str]], mode: TlsMode, **extra: object) -> TlsConfig:
    cert, key = certs["server"]
    return TlsConfig(server_mode=mode, server_cert_path=cert, server_key_path=key, **extra)  # type: ignore[arg-type]


def _ping(address: str, ctx: ssl.SSLContext | None) -> RemotingCommand:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER on a pool of its own, plain (ctx None) or over TLS."""
    async def go() -> RemotingCommand:
        pool = ConnectionPool(ssl_context=ctx, connect_timeout_s=5)
        try:
            return await pool.request(address, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                                                                       {}), 5)
        finally:
            await pool.close()

    return run(go())


def _send_and_pull(cluster: LocalCluster, count: int) -> tuple[list[bytes], list[bool]]:
    """Messages sent and pulled back, and whether each broker connection ran over TLS while the producer
    was connected."""
    async def send() -> list[bool]:
        async with Producer(cluster.namesrv_addr, "tls-producer") as producer:
            for i in range(count):
                assert (await producer.send(TOPIC, f"m{i}".encode())).status == "SEND_OK"
            return _tls_connections(cluster)

    async def pull() -> list[bytes]:
        async with PullConsumer(cluster.namesrv_addr, "tls-consumer") as consumer:
            [mq] = await consumer.queues(TOPIC)
            return [m.body for m in (await consumer.pull(mq, 0, 32)).messages]

    cluster.create_topic(TOPIC)
    over_tls = run(send())
    cluster.wait_dispatched()  # a send is answered before the dispatcher puts it in the consume queue
    return run(pull()), over_tls


def _tls_connections(cluster: LocalCluster) -> list[bool]:
    """Whether each connection the broker serves runs over TLS."""
    def look() -> list[bool]:
        return [c._transport.get_extra_info("ssl_object") is not None
                for c in cluster.broker.server.connections if c._transport is not None]

    return cluster.call(look)


def test_permissive_serves_tls_and_plain_clients_side_by_side(certs: dict[str, tuple[str, str]],
                                                              tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.PERMISSIVE)) as cluster:
        use_client_tls(TlsConfig(client_enable=True))  # every client of this process: tls.enable=true
        bodies, over_tls = _send_and_pull(cluster, 5)
        assert bodies == [f"m{i}".encode() for i in range(5)]
        assert over_tls and all(over_tls), over_tls
        use_client_tls(None)
        assert _ping(cluster.namesrv_addr, None).code == ResponseCode.SUCCESS
        assert _ping(cluster.namesrv_addr, TlsConfig(client_enable=True).client_context()).code == ResponseCode.SUCCESS


def test_enforcing_closes_plain_connections(certs: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.ENFORCING)) as cluster:
        assert _ping(cluster.namesrv_addr, TlsConfig(client_enable=True).client_context()).code == ResponseCode.SUCCESS
        with pytest.raises(ConnectionClosedError):
            _ping(cluster.namesrv_addr, None)
        with pytest.raises(ConnectionClosedError):
            _ping(cluster.broker_addr, None)


def test_a_client_checking_the_server_trusts_only_its_trust_file(certs: dict[str, tuple[str, str]],
                                                                   tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.ENFORCING)) as cluster:
        trusting = TlsConfig(client_enable=True, client_auth_server=True, client_trust_cert_path=certs["server"][0])
        assert _ping(cluster.namesrv_addr, trusting.client_context()).code == ResponseCode.SUCCESS
        wary = TlsConfig(client_enable=True, client_auth_server=True, client_trust_cert_path=certs["stranger"][0])
        with pytest.raises(ConnectionClosedError, match="(?i)certificate"):
            _ping(cluster.namesrv_addr, wary.client_context())


def test_a_server_requiring_client_certificates_serves_only_trusted_ones(certs: dict[str, tuple[str, str]],
                                                                          tmp_path: Path) -> None:
    server = _server_tls(certs, TlsMode.ENFORCING, server_need_client_auth="require",
                         server_trust_cert_path=certs["client"][0])
    with LocalCluster(tmp_path / "store", tls=server) as cluster:
        cert, key = certs["client"]
        with_cert = TlsConfig(client_enable=True, client_cert_path=cert, client_key_path=key)
        assert _ping(cluster.namesrv_addr, with_cert.client_context()).code == ResponseCode.SUCCESS
        # without a certificate (or with one nobody signed for it) the server ends the handshake: the
        # client learns it at the handshake or at its first request, depending on the TLS version
        for config in (TlsConfig(client_enable=True),
                       TlsConfig(client_enable=True, client_cert_path=certs["stranger"][0],
                                 client_key_path=certs["stranger"][1])):
            with pytest.raises(ConnectionClosedError):
                _ping(cluster.namesrv_addr, config.client_context())


def test_a_disabled_server_refuses_tls_and_serves_plain(certs: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.DISABLED)) as cluster:
        assert _ping(cluster.namesrv_addr, None).code == ResponseCode.SUCCESS
        with pytest.raises(ConnectionClosedError):
            _ping(cluster.namesrv_addr, TlsConfig(client_enable=True).client_context())


def test_a_silent_connection_is_closed_and_the_server_goes_on(certs: dict[str, tuple[str, str]],
                                                              tmp_path: Path) -> None:
    """A connection that sends nothing does not hold the accept loop: others are served meanwhile."""
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.PERMISSIVE)) as cluster:
        async def go() -> int:
            host, port = cluster.namesrv_addr.rsplit(":", 1)
            _, silent = await asyncio.open_connection(host, int(port))
            try:
                pool = ConnectionPool(ssl_context=None)
                try:
                    answer = await pool.request(cluster.namesrv_addr, RemotingCommand.request(
                        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}), 5)
                finally:
                    await pool.close()
                return answer.code
            finally:
                silent.close()

        assert run(go()) == ResponseCode.SUCCESS


def test_settings_read_from_a_tls_properties_file_and_bad_ones_refused(certs: dict[str, tuple[str, str]],
                                                                       tmp_path: Path) -> None:
    cert, key = certs["server"]
    path = tmp_path / "tls.properties"
    path.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                    "tls.enable=true\ntls.client.authServer=true\n" + f"tls.client.trustCertPath={cert}\n")
    config = TlsConfig.from_file(str(path))
    assert (config.server_mode, config.server_tls, config.client_enable, config.client_auth_server) == \
        (TlsMode.ENFORCING, True, True, True)
    assert config.client_context().verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(TlsConfigError, match="tls.server.mode"):
        TlsConfig.from_properties({"tls.server.mode": "sometimes"})
    with pytest.raises(TlsConfigError, match="enforcing needs"):
        TlsConfig.from_properties({"tls.server.mode": "enforcing"})
    with pytest.raises(TlsConfigError, match="trustCertPath"):
        TlsConfig.from_properties({"tls.server.need.client.auth": "require"})
    with pytest.raises(TlsConfigError, match="cannot load"):
        TlsConfig(server_cert_path=str(tmp_path / "missing.crt"), server_key_path=key).server_context()
    assert not TlsConfig().server_tls  # permissive without a certificate: plain only, as before


def test_connection_peers_see_each_other_over_tls(certs: dict[str, tuple[str, str]], tmp_path: Path) -> None:
    """The broker's connection bookkeeping (peer address, client channel) works the same over TLS."""
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.ENFORCING)) as cluster:
        use_client_tls(TlsConfig(client_enable=True))
        async def go() -> list[tuple[str, int]]:
            async with Producer(cluster.namesrv_addr, "tls-peer-producer") as producer:
                await producer.send(TOPIC, b"x")
                connections: list[Connection] = cluster.call(lambda: list(cluster.broker.server.connections))
                return [c.peer for c in connections]

        _send_and_pull(cluster, 1)
        peers = run(go())
        assert peers and all(host == "127.0.0.1" and port > 0 for host, port in peers)


@requires_cpp_client
def test_the_official_cpp_client_is_served_in_plain_text_by_a_permissive_broker(certs: dict[str, tuple[str, str]],
                                                                                 tmp_path: Path) -> None:
    """The connections of a TLS-serving server are accepted by our own loop, which peeks at the first byte:
    a real client that knows nothing of TLS must notice nothing."""
    with LocalCluster(tmp_path / "store", tls=_server_tls(certs, TlsMode.PERMISSIVE)) as cluster:
        runner = Runner(["produce", cluster.namesrv_addr, "CppTlsTopic", "cpp-tls-producer", "6"], tmp_path)
        try:
            runner.collect_until(lambda seen: any(s.get("done") for s in seen), 30, "the C++ producer")
            runner.wait(10)
        finally:
            runner.kill()
        assert [s["status"] for s in runner.seen if "status" in s] == ["OK"] * 6
        cluster.wait_until(lambda: sum(cluster.broker.store.max_offset("CppTlsTopic", q) for q in range(8)) == 6, 10,
                           "the C++ client's messages")


def test_serve_with_a_tls_config_and_metrics_as_a_user_runs_them(certs: dict[str, tuple[str, str]],
                                                                 tmp_path: Path) -> None:
    """``rocketstore serve --tls-config`` in enforcing mode (its own broker registering over TLS, as
    tls.enable=true says), client commands with ``--tls``, and ``--metrics-port`` serving the cluster's
    metrics; a plain client command is refused."""
    cert, key = certs["server"]
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                        "tls.enable=true\n")
    conf = write_broker_conf(tmp_path / "broker.conf")
    with ServeProcess(tmp_path / "store", conf, extra_args=("--tls-config", str(tls_file), "--metrics-port", "0")
                      ) as serve:
        metrics_url = re.search(r"metrics on (http://\S+/metrics)", serve.first_line)
        assert metrics_url, serve.first_line
        made = cli("topic", "create", "ServeTlsTopic", "-b", serve.broker_addr, "-n", serve.namesrv_addr, "--tls")
        assert made.returncode == 0, made.stderr
        sent = cli("send", "ServeTlsTopic", "over tls", "-n", serve.namesrv_addr, "--tls")
        assert sent.returncode == 0, sent.stderr
        plain = cli("topic", "list", "-n", serve.namesrv_addr, "--request-timeout-s", "3")
        assert plain.returncode == 1 and "Traceback" not in plain.stderr, plain.stderr
        with urllib.request.urlopen(metrics_url.group(1), timeout=30) as response:
            text = response.read().decode()
        assert re.search(r'^rocketmq_producer_offset\{cluster="DefaultCluster",broker="[^"]+",topic="ServeTlsTopic"\} 1\.0$',
                         text, re.MULTILINE), text[:2000]
        assert "rocketstore_exporter_scrape_errors 0.0" in text  # its own admin client spoke TLS too


def test_a_refused_handshake_is_logged_with_the_client_address(certs: dict[str, tuple[str, str]], tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """The server's warning names the client whose handshake failed (it said "TLS handshake with ?")."""
    # the broker's own connections (enforcing: over TLS) present the client certificate, so its registration
    # is no refused handshake of its own
    server = _server_tls(certs, TlsMode.ENFORCING, server_need_client_auth="require",
                         server_trust_cert_path=certs["client"][0], client_cert_path=certs["client"][0],
                         client_key_path=certs["client"][1])
    with LocalCluster(tmp_path / "store", tls=server) as cluster:
        with caplog.at_level("WARNING", logger="rocketstore.remoting.server"), pytest.raises(ConnectionClosedError):
            _ping(cluster.namesrv_addr, TlsConfig(client_enable=True).client_context())
        cluster.wait_until(lambda: any("TLS handshake with" in r.getMessage() for r in caplog.records), 10,
                           "the server's warning")
    [warning] = [r.getMessage() for r in caplog.records if "TLS handshake with" in r.getMessage()]
    assert "TLS handshake with 127.0.0.1:" in warning, warning
