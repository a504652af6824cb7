"""A reply sent oneway or by a selector goes out as SEND_REPLY_MESSAGE_V2, as 4.9.3's
MQClientAPIImpl.sendMessage names every send of a message with MSG_TYPE=reply whatever its communication
mode: the broker then pushes it to the requester (and stores it as sent, without CLUSTER), where a
SEND_MESSAGE_V2 would only store it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, run_within, wait_stored
from test_python_push_consumer import create_topic

from rocketstore.client import Producer, ReplyMessage, RequestProducer
from rocketstore.client.producer import reply_properties

CLUSTER = "DefaultCluster"
TOPIC = "Hunt17OnewayReplyTopic"
WAIT_S = 15.0


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store", broker_cluster_name=CLUSTER) as c:
        yield c


def test_a_reply_sent_oneway_or_by_selector_reaches_the_requester(cluster: LocalCluster) -> None:
    async def go() -> list[ReplyMessage]:
        await create_topic(cluster, TOPIC)
        async with Producer(cluster.namesrv_addr, "hunt17-oneway-replier") as replier, \
                RequestProducer(cluster.namesrv_addr, "hunt17-oneway-requester") as requester:
            replies = []
            for i, how in enumerate(("oneway", "selector")):
                body = f"ping {how}".encode()
                asking = asyncio.ensure_future(requester.request(TOPIC, body, timeout_s=WAIT_S))
                stored = await asyncio.to_thread(wait_stored, cluster, TOPIC, i + 1, "the request", queues=4)
                request = next(m for m in stored if m.body == body)
                topic, props = reply_properties(request)
                if how == "oneway":
                    await replier.send_oneway(topic, b"re: oneway", properties=props)
                else:
                    await replier.send_orderly(topic, b"re: selector", "key", properties=props)
                replies.append(await asking)
            return replies

    replies = run_within(go, 60)  # type: ignore[arg-type]
    assert [r.body for r in replies] == [b"re: oneway", b"re: selector"]
    assert all(r.properties["MSG_TYPE"] == "reply" for r in replies)
    stored = wait_stored(cluster, f"{CLUSTER}_REPLY_TOPIC", 2, "the stored replies")
    assert all("CLUSTER" not in m.properties for m in stored), "a reply is stored with its properties as sent"
