"""TLS private keys: an encrypted key with its tls.*.keyPassword loads; an encrypted key without one is a
clear start-up error naming the missing setting, never a pass-phrase prompt on the terminal (OpenSSL's
default when no password is given), which would hold a server's start until someone types."""

from __future__ import annotations

import subprocess

import pytest

from rocketstore.remoting.tls import TlsConfig, TlsConfigError


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("keys")
    cert, key, encrypted = directory / "s.crt", directory / "s.key", directory / "s.enc.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=s",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    subprocess.run(["openssl", "pkcs8", "-topk8", "-in", str(key), "-out", str(encrypted), "-passout", "pass:secret"],
                   check=True, capture_output=True)
    return {"cert": str(cert), "key": str(key), "encrypted": str(encrypted)}


def test_an_encrypted_key_loads_with_its_password(keys: dict[str, str]) -> None:
    TlsConfig(server_cert_path=keys["cert"], server_key_path=keys["encrypted"],
              server_key_password="secret").server_context()
    TlsConfig(client_enable=True, client_cert_path=keys["cert"], client_key_path=keys["encrypted"],
              client_key_password="secret").client_context()
    TlsConfig(server_cert_path=keys["cert"], server_key_path=keys["key"]).server_context()  # plain key, no password


@pytest.mark.parametrize("side", ["server", "client"])
def test_an_encrypted_key_without_a_password_names_the_setting(keys: dict[str, str], side: str,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TlsConfigError, match=rf"tls\.{side}\.keyPassword"):
        if side == "server":
            TlsConfig(server_cert_path=keys["cert"], server_key_path=keys["encrypted"]).server_context()
        else:
            TlsConfig(client_enable=True, client_cert_path=keys["cert"],
                      client_key_path=keys["encrypted"]).client_context()
    assert "pass phrase" not in capfd.readouterr().err  # OpenSSL's prompt was never shown
