"""A server that requires client certificates (``tls.server.need.client.auth=require``, checked against
``tls.server.trustCertPath``) and the handshakes it refuses."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig, use_client_tls
from rocketstore.remoting.transport import ConnectionPool, run


def _self_signed(directory: Path, name: str) -> tuple[str, str]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    f"/CN={name}", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    directory = tmp_path_factory.mktemp("certs")
    return {name: _self_signed(directory, name) for name in ("server", "client", "stranger")}


@pytest.fixture(autouse=True)
def plain_by_default() -> Iterator[None]:
    yield
    use_client_tls(None)


def _answer(address: str, config: TlsConfig) -> int:
    async def go() -> int:
        pool = ConnectionPool(ssl_context=config.client_context(), connect_timeout_s=10)
        try:
            return (await pool.request(address, RemotingCommand.request(
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}), 10)).code
        finally:
            await pool.close()

    return run(go())


def _client(certs: dict[str, tuple[str, str]], name: str | None) -> TlsConfig:
    if name is None:
        return TlsConfig(client_enable=True)
    cert, key = certs[name]
    return TlsConfig(client_enable=True, client_cert_path=cert, client_key_path=key)


def _server(certs: dict[str, tuple[str, str]], tmp_path: Path, lines: str) -> TlsConfig:
    cert, key = certs["server"]
    path = tmp_path / "tls.properties"
    path.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n{lines}")
    return TlsConfig.from_file(str(path))


def test_a_refused_handshake_is_logged_with_the_client_address(certs: dict[str, tuple[str, str]], tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """The server's warning names the client whose handshake failed (it said "TLS handshake with ?")."""
    server = _server(certs, tmp_path, f"tls.server.need.client.auth=require\n"
                                      f"tls.server.trustCertPath={certs['client'][0]}\n")
    with LocalCluster(tmp_path / "store", tls=server) as cluster:
        with caplog.at_level("WARNING", logger="rocketstore.remoting.server"), pytest.raises(ConnectionClosedError):
            _answer(cluster.namesrv_addr, _client(certs, None))
        cluster.wait_until(lambda: any("TLS handshake with" in r.getMessage() for r in caplog.records), 10,
                           "the server's warning")
    [warning] = [r.getMessage() for r in caplog.records if "TLS handshake with" in r.getMessage()]
    assert "TLS handshake with 127.0.0.1:" in warning, warning
