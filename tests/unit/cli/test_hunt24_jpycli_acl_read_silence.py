"""A 4.9.3 broker started without aclEnable never answers GET_BROKER_CLUSTER_ACL_INFO (52) nor
GET_BROKER_CLUSTER_ACL_CONFIG (54).  Captured from 4.9.3: its AdminBrokerProcessor meets a null access validator,
logs "Failed to generate a proper getBrokerAclConfigVersion response" (a NullPointerException) and writes no
response at all, so `rocketstore acl version` / `acl config` only said "no response ... within 5.0 s".  The
timeout now says why.  A peer that reads the requests and never answers stands in for that broker."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from rocketstore.cli.main import main


@pytest.fixture
def silent_broker() -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        accepted.append(conn)
        while conn.recv(65536):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1:%d" % listener.getsockname()[1]
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


@pytest.mark.parametrize("command", ["version", "config"])
def test_acl_read_timeout_says_acl_is_off(command: str, silent_broker: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["acl", command, "-b", silent_broker, "-n", "127.0.0.1:9", "--request-timeout-s", "0.2"])
    err = capsys.readouterr().err
    assert rc != 0
    assert "no response from" in err
    assert "aclEnable=false" in err
