"""A TLS client whose handshake a server ends (a server in disabled mode, or permissive without a
certificate: 4.9.3 closes such a connection) is told that its TLS handshake failed, not
"cannot connect to host:port: " with nothing after the colon; the server's log says a TLS handshake came
(4.9.3 warns of it too), not that a frame of 369 MB was too large."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.codes import RequestCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.tls import TlsConfig, TlsMode
from rocketstore.remoting.transport import ConnectionPool, run

#: uvloop has its own TLS transport: its handshake errors too
pytestmark = pytest.mark.both_loops


@pytest.mark.parametrize("mode", [TlsMode.DISABLED, TlsMode.PERMISSIVE])
def test_a_tls_client_refused_by_a_server_is_told_its_handshake_failed(tmp_path: Path, mode: TlsMode,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    with LocalCluster(tmp_path / "store", tls=TlsConfig(server_mode=mode)) as cluster:  # no certificate
        async def ask() -> RemotingCommand:
            pool = ConnectionPool(ssl_context=TlsConfig(client_enable=True).client_context(), connect_timeout_s=10)
            try:
                return await pool.request(cluster.namesrv_addr, RemotingCommand.request(
                    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}), 10)
            finally:
                await pool.close()

        with caplog.at_level("WARNING", logger="rocketstore.remoting.transport"), \
                pytest.raises(ConnectionClosedError) as caught:
            run(ask())
        cluster.wait_until(lambda: any("closing" in r.getMessage() for r in caplog.records), 10, "the server's log")
    message = str(caught.value)
    assert "TLS handshake" in message and not message.rstrip().endswith(":"), message
    [logged] = [r.getMessage() for r in caplog.records if "closing" in r.getMessage()]
    assert "TLS handshake" in logged and "serves no TLS" in logged, logged
