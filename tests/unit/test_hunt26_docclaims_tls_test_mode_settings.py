"""docs/tls.md says a test-mode server (tls.test.mode.enable=true) uses neither tls.server.certPath / keyPath
nor tls.server.need.client.auth, as 4.9.3's TlsHelper.buildSslContext, which in test mode builds the server's
context from a certificate made at start with ClientAuth.OPTIONAL and reads none of those settings.  A
tls.properties asking for client certificates (need.client.auth=require, no trustCertPath) or naming only a
certPath beside tls.test.mode.enable=true starts a 4.9.3 server; here it was refused at start ("tls.server
.need.client.auth asks clients for a certificate: tls.server.trustCertPath must ...", exit status 2).
Checked with 4.9.3's NamesrvStartup (tls.server.mode=enforcing, tls.test.mode.enable=true,
tls.server.need.client.auth=require, no trustCertPath): it boots and answers a TLS client that presents no
certificate."""

from __future__ import annotations

import ssl

import pytest

from rocketstore.remoting.tls import TlsConfig, TlsConfigError, TlsMode


@pytest.mark.parametrize("extra", [
    {"tls.server.need.client.auth": "require"},
    {"tls.server.need.client.auth": "optional"},
    {"tls.server.certPath": "/nonexistent/server.crt"},
    {"tls.server.keyPath": "/nonexistent/server.key", "tls.server.need.client.auth": "require"},
    # a test-mode client presents nothing either (TlsHelper gives it no key): review of 154ce1a
    {"tls.client.certPath": "/nonexistent/client.crt"},
])
def test_a_test_mode_server_ignores_the_settings_it_does_not_use(extra: dict[str, str]) -> None:
    config = TlsConfig.from_properties({"tls.server.mode": "enforcing", "tls.test.mode.enable": "true",
                                        **extra})
    assert config.test_mode and config.server_mode is TlsMode.ENFORCING and config.server_tls
    ctx = config.server_context()  # the self-signed certificate; none of the files named above is opened
    assert ctx.verify_mode is ssl.CERT_OPTIONAL
    assert "not used in test mode" in config.test_mode_notice()


@pytest.mark.parametrize("extra", [
    {"tls.server.need.client.auth": "require"},
    {"tls.server.certPath": "/etc/server.crt"},
    {"tls.client.certPath": "/etc/client.crt"},
])
def test_outside_test_mode_the_same_settings_are_still_refused(extra: dict[str, str]) -> None:
    with pytest.raises(TlsConfigError):
        TlsConfig.from_properties({"tls.server.mode": "permissive", **extra})
