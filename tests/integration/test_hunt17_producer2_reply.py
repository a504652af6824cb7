"""A reply to a message with CLUSTER but without REPLY_TO_CLIENT is built and sent, as 4.9.3's
MessageUtil.createReplyMessage builds it (only a missing CLUSTER fails there): the broker refuses to push it
(ReplyMessageProcessor: "reply message properties[REPLY_TO_CLIENT] is null", SYSTEM_ERROR) and stores it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from local_cluster import LocalCluster, run_within, wait_stored

from rocketstore.client import Producer
from rocketstore.client.errors import BrokerError
from rocketstore.remoting.codes import ResponseCode

CLUSTER = "DefaultCluster"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as c:
        yield c


def test_a_reply_without_reply_to_client_goes_to_the_broker(cluster: LocalCluster) -> None:
    request = SimpleNamespace(properties={"CLUSTER": CLUSTER, "CORRELATION_ID": "corr-1"})

    async def go() -> BrokerError:
        # no retries: 4.9.3's sync send retries SYSTEM_ERROR, and each attempt would be stored
        async with Producer(cluster.namesrv_addr, "hunt17-producer2-replier", retry_times=0) as replier:
            with pytest.raises(BrokerError) as raised:
                await replier.send_reply(request, b"re: nobody")
            return raised.value

    error = run_within(go, 60)  # type: ignore[arg-type]
    assert error.code == ResponseCode.SYSTEM_ERROR
    assert error.remark == "reply message properties[REPLY_TO_CLIENT] is null"
    [stored] = wait_stored(cluster, f"{CLUSTER}_REPLY_TOPIC", 1, "the reply the broker could not push")
    assert stored.body == b"re: nobody"
    assert stored.properties["MSG_TYPE"] == "reply"
    assert stored.properties["CORRELATION_ID"] == "corr-1"
    assert "REPLY_TO_CLIENT" not in stored.properties and "TTL" not in stored.properties
