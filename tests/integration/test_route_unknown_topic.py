"""A send to a topic nobody knows, on a cluster that does not create topics on a send: the error names
that topic (4.9.3: "No route info of this topic: <topic>"), not the TBW102 template it fell back to."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_cluster import LocalCluster

from rocketstore.client import Producer
from rocketstore.client.errors import NoRouteError
from rocketstore.remoting.transport import run


def _unknown_topic_send_error(tmp_path: Path, topic: str, group: str) -> NoRouteError:
    """The error of one send (no retries) to *topic*, which no name server knows, on a cluster that does not
    create topics on a send."""
    with LocalCluster(tmp_path / "store", auto_create_topic_enable=False) as cluster:
        async def send() -> None:
            async with Producer(cluster.namesrv_addr, group, retry_times=0) as producer:
                await producer.send(topic, b"x")

        with pytest.raises(NoRouteError) as caught:
            run(send())
    return caught.value


def test_a_send_to_an_unknown_topic_without_auto_create_names_that_topic(tmp_path: Path) -> None:
    error = _unknown_topic_send_error(tmp_path, "NoSuchTopicHere", "unknown-topic-group")
    assert error.topic == "NoSuchTopicHere"
    assert str(error).startswith("No route info of this topic: NoSuchTopicHere See "
                                 "http://rocketmq.apache.org/docs/faq/ for further details. "
                                 "Cause: the name servers do not know it")
