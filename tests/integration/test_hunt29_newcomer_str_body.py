"""A str body (``producer.send("TopicA", "hello")``, the first thing a newcomer from Java or from the C++
client's ``set_body("hello")`` writes) raises a TypeError that says the body must be bytes, instead of
``sequence item 2: expected a bytes-like object, str found`` from deep in the frame encoder; nothing is
stored.  A batch names the message.  A bytes-like body (bytearray, memoryview) still goes out as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, run_within

from rocketstore.client import BlockingProducer, OutgoingMessage, Producer

TOPIC = "Hunt29StrBodyTopic"


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        c.create_topic(TOPIC, 1)
        yield c


def test_a_str_body_is_refused_naming_the_type_and_the_fix(cluster: LocalCluster) -> None:
    async def go() -> None:
        async with Producer(cluster.namesrv_addr, "hunt29-str-body") as producer:
            for send in (lambda: producer.send(TOPIC, "hello"),  # type: ignore[arg-type]
                         lambda: producer.send_oneway(TOPIC, "hello"),  # type: ignore[arg-type]
                         lambda: producer.send_orderly(TOPIC, "hello", "k"),  # type: ignore[arg-type]
                         # (review) one over compressMsgBodyOverHowmuch is compressed before the frame is built
                         lambda: producer.send(TOPIC, "x" * 5000)):  # type: ignore[arg-type]
                with pytest.raises(TypeError, match=r"must be bytes .*not str.*body\.encode\(\)"):
                    await send()
            # a batch names the message: the usual one (tags only) and one with keys take different encoders
            for first in (OutgoingMessage(b"a"), OutgoingMessage(b"a", keys="k")):
                with pytest.raises(TypeError, match="^message 1 of the batch: .*must be bytes .*not str"):
                    await producer.send_batch(TOPIC, [first, OutgoingMessage("s")])  # type: ignore[arg-type]
            assert (await producer.send(TOPIC, bytearray(b"ba"))).status == "SEND_OK"
            assert (await producer.send(TOPIC, memoryview(b"mv"))).status == "SEND_OK"
    run_within(go, 30.0)


def test_the_blocking_producer_says_the_same(cluster: LocalCluster) -> None:
    with BlockingProducer(cluster.namesrv_addr, "hunt29-str-body-b") as producer:
        with pytest.raises(TypeError, match="must be bytes"):
            producer.send(TOPIC, "hello")  # type: ignore[arg-type]
        assert producer.send(TOPIC, b"ok").status == "SEND_OK"
