"""A send to a topic nobody knows, on a cluster that does not create topics on a send: the error names
that topic (4.9.3: "No route info of this topic: <topic>"), not the TBW102 template it fell back to."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.transport import run


def test_a_send_to_an_unknown_topic_without_auto_create_names_that_topic(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "store", auto_create_topic_enable=False) as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, "unknown-topic-group", retry_times=0) as producer:
                await producer.send("NoSuchTopicHere", b"x")

        with pytest.raises(NoRouteError) as caught:
            run(send())
    assert caught.value.topic == "NoSuchTopicHere"
    assert str(caught.value).startswith("No route info of this topic: NoSuchTopicHere See "
                                        "http://rocketmq.apache.org/docs/faq/ for further details. "
                                        "Cause: the name servers do not know it")
