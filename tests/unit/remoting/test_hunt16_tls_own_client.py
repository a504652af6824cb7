"""Which connections a tls.properties turns TLS on for: a client's only with tls.enable=true; a broker's own
(TlsConfig.own_client_context) with tls.enable=true, or without tls.enable when tls.server.mode is
enforcing, as 4.9.3's BrokerStartup defaults the broker's useTLS."""

from __future__ import annotations

import ssl

from rocketstore.remoting.tls import TlsConfig, client_ssl_context

TEST_MODE = {"tls.test.mode.enable": "true"}  # a server that needs no certificate files


def test_tls_enable_not_given_is_told_apart_from_false() -> None:
    assert TlsConfig.from_properties({}).client_enable is None
    assert TlsConfig.from_properties({"tls.enable": "false"}).client_enable is False
    assert TlsConfig.from_properties({"tls.enable": "TRUE"}).client_enable is True


def test_an_enforcing_config_without_tls_enable_is_tls_for_the_broker_only() -> None:
    enforcing = TlsConfig.from_properties({**TEST_MODE, "tls.server.mode": "enforcing"})
    assert isinstance(enforcing.own_client_context(), ssl.SSLContext)
    assert client_ssl_context(enforcing) is None  # a client given the same file stays plain (tls.enable false)
    for mode in ("permissive", "disabled"):
        assert TlsConfig.from_properties({**TEST_MODE, "tls.server.mode": mode}).own_client_context() is None


def test_tls_enable_given_decides_in_every_mode() -> None:
    for mode in ("disabled", "permissive", "enforcing"):
        on = TlsConfig.from_properties({**TEST_MODE, "tls.server.mode": mode, "tls.enable": "true"})
        off = TlsConfig.from_properties({**TEST_MODE, "tls.server.mode": mode, "tls.enable": "false"})
        assert isinstance(on.own_client_context(), ssl.SSLContext)
        assert off.own_client_context() is None
