"""A request header without "code" (or with a null one) is request code 0, as 4.9.3 reads it.

4.9.3's fastjson leaves RemotingCommand's int field at 0: its broker answers REQUEST_CODE_NOT_SUPPORTED with
the remark " request type 0 not supported" (captured from 4.9.3: code 3, that remark, the request's opaque,
flag 1) and keeps the connection; its name server answers nothing for a code it does not serve, and keeps
the connection too.  Ours closed the connection as an undecodable frame.
"""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from tests.integration.local_cluster import LocalCluster


def _frame(header: dict[str, object]) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">II", 4 + len(raw), len(raw)) + raw


def _read(sock: socket.socket) -> dict[str, object]:
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "the connection was closed"
            data += chunk
        return data

    (length,) = struct.unpack(">I", exact(4))
    data = exact(length)
    (header_length,) = struct.unpack(">I", data[:4])
    return json.loads(data[4:4 + (header_length & 0xFFFFFF)])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> LocalCluster:
    with LocalCluster(Path(tmp_path_factory.mktemp("edges_nocode")) / "store") as c:
        yield c


@pytest.mark.parametrize("header", [
    {"flag": 0, "language": "JAVA", "opaque": 5, "serializeTypeCurrentRPC": "JSON", "version": 395},
    {"code": None, "flag": 0, "language": "JAVA", "opaque": 5, "serializeTypeCurrentRPC": "JSON", "version": 395},
], ids=["no code", "null code"])
def test_the_broker_answers_request_code_0_and_keeps_the_connection(cluster: LocalCluster,
                                                                     header: dict[str, object]) -> None:
    host, port = cluster.broker_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(_frame(header))
        answer = _read(sock)
        assert (answer["code"], answer.get("remark"), answer["opaque"], answer["flag"]) == \
            (3, " request type 0 not supported", 5, 1)
        sock.sendall(_frame({"code": 26, "flag": 0, "language": "JAVA", "opaque": 6, "version": 395}))
        again = _read(sock)  # GET_BROKER_CONFIG on the same connection
        assert (again["code"], again["opaque"]) == (0, 6)


def test_the_name_server_keeps_the_connection(cluster: LocalCluster) -> None:
    host, port = cluster.namesrv_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(_frame({"flag": 0, "language": "JAVA", "opaque": 5, "version": 395}))  # (no answer)
        sock.sendall(_frame({"code": 206, "flag": 0, "language": "JAVA", "opaque": 6, "version": 395}))
        answer = _read(sock)  # GET_ALL_TOPIC_LIST_FROM_NAMESERVER: the next answer is that one's
        assert (answer["code"], answer["opaque"]) == (0, 6)
