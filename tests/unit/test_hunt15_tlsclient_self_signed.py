"""tls.test.mode.enable's self-signed certificate, made in pure Python: a P-256 key and an X.509 certificate
that OpenSSL loads and whose self-signature the openssl command verifies; the setting as read from a
tls.properties file."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rocketstore.remoting.self_signed import make_self_signed, on_curve
from rocketstore.remoting.tls import TlsConfig, TlsConfigError, TlsMode


def test_the_certificate_loads_and_its_signature_verifies(tmp_path: Path) -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    made = make_self_signed("rocketstore-test-mode", start, timedelta(days=365 * 40))  # past 2050: GeneralizedTime
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(made.cert_pem)
    key.write_bytes(made.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))  # OpenSSL checks that the key belongs to the certificate
    decoded = ssl._ssl._test_decode_cert(str(cert))  # type: ignore[attr-defined]
    assert decoded["subject"] == ((("commonName", "rocketstore-test-mode"),),)
    assert decoded["notBefore"] == "Jan  2 03:04:05 2026 GMT" and decoded["notAfter"].endswith("2065 GMT")
    if shutil.which("openssl"):
        verified = subprocess.run(["openssl", "verify", "-CAfile", str(cert), str(cert)], capture_output=True,
                                  text=True, check=False)
        assert verified.returncode == 0, verified.stdout + verified.stderr  # the ECDSA self-signature is right
    again = make_self_signed("rocketstore-test-mode", start, timedelta(days=1))
    assert again.key_pem != made.key_pem  # a fresh key every time


def test_the_curve_arithmetic() -> None:
    from rocketstore.remoting import self_signed as s

    assert on_curve(s._G) and s._multiply(s._N, s._G) is None
    assert s._multiply(2, s._G) == s._add(s._G, s._G) and on_curve(s._multiply(12345, s._G))
    assert s._multiply(s._N - 1, s._G) == (s._G[0], -s._G[1] % s._P)


def test_test_mode_read_from_tls_properties() -> None:
    config = TlsConfig.from_properties({"tls.server.mode": "enforcing", "tls.test.mode.enable": "true"})
    assert config.test_mode and config.server_mode is TlsMode.ENFORCING and config.server_tls
    assert isinstance(config.server_context(), ssl.SSLContext)
    assert not TlsConfig.from_properties({}).test_mode  # off unless asked for (4.9.3: on by default)
    with pytest.raises(TlsConfigError, match="tls.test.mode.enable"):
        TlsConfig.from_properties({"tls.server.mode": "enforcing"})  # the error names the way out
    client = TlsConfig(client_enable=True, test_mode=True, client_auth_server=True,
                       client_trust_cert_path="/nonexistent/ca.crt").client_context()
    assert client.verify_mode == ssl.CERT_NONE  # 4.9.3's test mode: the client trusts any server
    # 4.9.3's test mode does not use the configured certificate: the start-up warning says so
    with_cert = TlsConfig(test_mode=True, server_cert_path="/etc/rocketmq/s.crt", server_key_path="/etc/rocketmq/s.key")
    assert "tls.server.certPath not used in test mode" in with_cert.test_mode_notice()
    assert isinstance(with_cert.server_context(), ssl.SSLContext)  # the missing files are never opened
