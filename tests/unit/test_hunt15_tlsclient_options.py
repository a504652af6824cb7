"""What a client's ``tls=`` means (client_ssl_context) and the Spark source's and sink's TLS options
(useTLS, tls.client.*), parsed into a picklable TlsConfig that keeps its key password out of repr."""

from __future__ import annotations

import pickle
import ssl

import pytest

from rocketstore.remoting.tls import TlsConfig, TlsConfigError, client_ssl_context
from rocketstore.spark.stream_options import SinkOptions, SourceOptions, SparkOptionError

NS = {"nameServer": "127.0.0.1:9876"}


def test_client_tls_choices() -> None:
    assert client_ssl_context(None) == "process"
    assert client_ssl_context(False) is None
    assert client_ssl_context(TlsConfig(client_enable=False)) is None  # tls.enable=false: plain
    on = client_ssl_context(True)
    assert isinstance(on, ssl.SSLContext) and on.verify_mode == ssl.CERT_NONE and not on.check_hostname
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    assert client_ssl_context(ctx) is ctx
    with pytest.raises(TypeError):
        client_ssl_context("true")  # type: ignore[arg-type]
    with pytest.raises(TlsConfigError, match="trustCertPath"):
        client_ssl_context(TlsConfig(client_enable=True, client_auth_server=True,
                                     client_trust_cert_path="/nonexistent/ca.crt"))


def test_spark_options_without_tls_follow_the_process() -> None:
    assert SinkOptions.parse(NS).tls is None
    assert SourceOptions.parse({**NS, "subscribe": "T"}, streaming=False).tls is None


def test_spark_use_tls_and_client_settings() -> None:
    sink = SinkOptions.parse({**NS, "useTLS": "true"})
    assert sink.tls == TlsConfig(client_enable=True)
    assert SinkOptions.parse({**NS, "useTLS": "false"}).tls == TlsConfig(client_enable=False)
    source = SourceOptions.parse({**NS, "subscribe": "T", "tls.client.authServer": "true",
                                  "tls.client.trustCertPath": "/etc/rocketmq/ca.crt",
                                  "tls.client.certPath": "/etc/rocketmq/c.crt", "tls.client.keyPath": "/etc/rocketmq/c.key",
                                  "tls.client.keyPassword": "pass-phrase-7"}, streaming=True)
    assert source.tls == TlsConfig(client_enable=True, client_auth_server=True,
                                   client_trust_cert_path="/etc/rocketmq/ca.crt",
                                   client_cert_path="/etc/rocketmq/c.crt", client_key_path="/etc/rocketmq/c.key",
                                   client_key_password="pass-phrase-7")
    assert "pass-phrase-7" not in repr(source)
    assert pickle.loads(pickle.dumps(source)) == source  # partitions carry the options to executors


def test_spark_tls_options_that_cannot_be_used_are_option_errors() -> None:
    with pytest.raises(SparkOptionError, match="useTLS=false contradicts"):
        SinkOptions.parse({**NS, "useTLS": "false", "tls.client.trustCertPath": "/ca.crt"})
    with pytest.raises(SparkOptionError, match="useTLS"):
        SinkOptions.parse({**NS, "useTLS": "sometimes"})
    with pytest.raises(SparkOptionError, match=r"tls\.client\.authServer"):
        SinkOptions.parse({**NS, "tls.client.authServer": "ture"})  # a typo must not turn the check off
    with pytest.raises(SparkOptionError, match="go together"):
        SinkOptions.parse({**NS, "tls.client.certPath": "/c.crt"})
