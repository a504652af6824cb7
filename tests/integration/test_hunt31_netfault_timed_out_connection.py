"""A client request unanswered in time closes its connection, so the next request opens another: 4.9.3's
clients do so (NettyRemotingClient.invokeSync closes the channel on a RemotingTimeoutException while
clientCloseSocketIfTimeout, default true).  Through a fault proxy whose open connection swallows what the
client sends (a broker gone without a FIN or an RST: its host down, a NAT entry dropped), every later call
of the same client timed out too, for as long as the client kept using that connection."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from local_cluster import LocalCluster

from rocketstore.client.admin import AdminClient
from rocketstore.errors import RequestTimeoutError
from rocketstore.remoting.transport import run


def test_a_timed_out_request_closes_the_connection_and_the_next_request_opens_another(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store") as cluster:
        port = int(cluster.broker_addr.rsplit(":", 1)[1])
        proxy = cluster.run(FaultProxy("127.0.0.1", port).start())
        try:
            async def scenario() -> None:
                # a generous bound for the calls meant to be answered (a loaded box), a short one only for the
                # swallowed call (each call reads the admin's timeout_s)
                async with AdminClient(cluster.namesrv_addr, timeout_s=15.0) as admin:
                    config, _ = await admin.broker_config(proxy.address)
                    assert config["brokerName"] == cluster.broker_name
                    cluster.call(proxy.swallow_up)
                    admin.timeout_s = 0.5
                    with pytest.raises(RequestTimeoutError, match="no response from"):
                        await admin.broker_config(proxy.address)
                    admin.timeout_s = 15.0
                    # the silent connection is gone: this call goes out on a new one and is answered
                    config, _ = await admin.broker_config(proxy.address)
                    assert config["brokerName"] == cluster.broker_name
                    assert proxy.accepted == 2

            run(scenario())
        finally:
            cluster.run(proxy.close())
