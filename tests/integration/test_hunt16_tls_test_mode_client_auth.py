"""A test-mode server (tls.test.mode.enable=true) asks clients for a certificate, optionally: 4.9.3's
TlsHelper.buildSslContext builds its server context with ClientAuth.OPTIONAL and no trust manager of its own,
so a client presenting no certificate is served and one presenting a certificate is checked against the
platform's trusted CAs (the JDK's cacerts there, OpenSSL's default paths here) and refused at the handshake
when none of them signed it.  The server is a real name server on 127.0.0.1; the CA list is pointed at a
file of the test's own with SSL_CERT_FILE, which OpenSSL reads when the server's context loads its
defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from certs import self_signed

from rocketstore.errors import ConnectionClosedError
from rocketstore.namesrv.server import NameServer
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig, TlsMode
from rocketstore.remoting.transport import ConnectionPool, run


def _serve_and_ask(tls_clients: list[TlsConfig]) -> list[int | str]:
    """A name server in test mode (enforcing, no certificate configured); each client's answer code, or
    "refused" when its connection was closed."""
    async def go() -> list[int | str]:
        namesrv = NameServer(tls=TlsConfig(server_mode=TlsMode.ENFORCING, test_mode=True))
        await namesrv.start("127.0.0.1", 0)
        try:
            results: list[int | str] = []
            for tls in tls_clients:
                pool = ConnectionPool(ssl_context=tls.client_context(), connect_timeout_s=10)
                try:
                    answer = await pool.request(namesrv.address, RemotingCommand.request(
                        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}), 10)
                    results.append(answer.code)
                except ConnectionClosedError:
                    results.append("refused")
                finally:
                    await pool.close()
            return results
        finally:
            await namesrv.close()

    return run(go())


def test_a_test_mode_server_refuses_a_client_certificate_no_trusted_ca_signed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path, "client")
    other_ca, _ = self_signed(tmp_path, "other-ca")
    monkeypatch.setenv("SSL_CERT_FILE", other_ca)  # the platform's CAs: one that did not sign the client's
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-such-dir"))
    anonymous = TlsConfig(client_enable=True)
    presenting = TlsConfig(client_enable=True, client_cert_path=cert, client_key_path=key)
    test_mode_client = TlsConfig(client_enable=True, test_mode=True, client_cert_path=cert,
                                 client_key_path=key)
    assert _serve_and_ask([anonymous, presenting, test_mode_client]) == \
        [ResponseCode.SUCCESS, "refused", ResponseCode.SUCCESS]  # a test-mode client presents nothing


def test_a_test_mode_server_accepts_a_client_certificate_a_trusted_ca_signed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path, "client")
    monkeypatch.setenv("SSL_CERT_FILE", cert)  # the platform's CAs: the client's own (self-signed) one
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-such-dir"))
    presenting = TlsConfig(client_enable=True, client_cert_path=cert, client_key_path=key)
    assert _serve_and_ask([presenting, TlsConfig(client_enable=True)]) == [ResponseCode.SUCCESS] * 2
