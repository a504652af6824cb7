"""The loopback peers the broker rows are measured against work as they claim: the NATS JetStream peer
stores and returns exactly what was published, and the echo ceiling's server sends back every byte.

No performance assertions (see test_bench_quick.py); the NATS test needs Debian's nats-server and is skipped
without it, as the bench itself skips those rows.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # bench/ sits at the repository root, beside src/
    sys.path.insert(0, str(REPO_ROOT))

from bench.echo import EchoServer, echo_rate, uvloop_available
from bench.nats_peer import NatsError, NatsJetStream

needs_nats = pytest.mark.skipif(NatsJetStream.executable() is None, reason="nats-server is not installed")


@needs_nats
def test_jetstream_peer_returns_what_was_published_in_order(tmp_path: Path) -> None:
    nats = NatsJetStream(str(tmp_path / "nats"))
    nats.start()
    try:
        assert nats.version
        bodies = [b"m%04d-" % i + bytes(range(i % 200)) for i in range(130)]
        # one in flight, then 64 in flight: publish_rate sends the same body; use distinct subjects
        for i, body in enumerate(bodies[:2]):
            assert nats.publish_rate(f"bench.one.{i}", body, 1) > 0
        nats.fill("bench.many", b"payload\r\nwith CRLF", 130)  # 128 in blocks of 64 + 2
        got, seconds = nats.fetch("bench.many", 130, 10)
        assert seconds > 0
        assert got == [b"payload\r\nwith CRLF"] * 130
        got, _ = nats.fetch("bench.one.1", 1, 1)
        assert got == [bodies[1]]
        with pytest.raises(ValueError):
            nats.fetch("bench.many", 130, 100)
    finally:
        nats.stop()
    assert nats.proc is None


@needs_nats
def test_jetstream_api_errors_are_raised(tmp_path: Path) -> None:
    nats = NatsJetStream(str(tmp_path / "nats"))
    nats.start()
    try:
        conn = nats.connect()
        try:
            conn.subscribe(b"_INBOX.t.*")
            with pytest.raises(NatsError):
                conn.request("$JS.API.STREAM.INFO.NO_SUCH_STREAM", None, b"_INBOX.t.1")
        finally:
            conn.close()
    finally:
        nats.stop()


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_echo_server_returns_every_byte(kind: str) -> None:
    if kind == "uvloop" and not uvloop_available():
        pytest.skip("uvloop is not installed")
    server = EchoServer(kind)
    server.start()
    try:
        payload = bytes(range(256)) * 300  # larger than one socket read
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(payload)
            back = b""
            while len(back) < len(payload):
                chunk = sock.recv(1 << 16)
                assert chunk, "echo server closed early"
                back += chunk
        assert back == payload
        assert echo_rate(server, 460, 20) > 0
    finally:
        server.stop()
    with pytest.raises(ValueError):
        EchoServer("trio")
