"""A request's TTL and its ReplyTimeoutError name the caller's timeout in milliseconds, as 4.9.3's
prepareSendRequest and waitResponse do: request_orderly's (request(msg, selector, arg, timeout)) whole timeout,
not what was left of it after the route look-up and the selector; and a timeout whose seconds times 1000 fall
just short of a whole millisecond (4.02 s) rounded, not cut to the millisecond below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from local_cluster import LocalCluster, run_within, wait_stored
from test_python_push_consumer import create_topic

from rocketstore.client import ReplyTimeoutError, RequestProducer

TOPIC = "Hunt22OrderlyTtlTopic"
TIMEOUT_S = 5.0


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with LocalCluster(tmp_path / "store") as c:
        yield c


def _unanswered(cluster: LocalCluster, orderly: bool, timeout_s: float) -> tuple[ReplyTimeoutError, str]:
    """The ReplyTimeoutError of a request nobody answers, and the TTL it was stored with."""
    async def go() -> ReplyTimeoutError:
        await create_topic(cluster, TOPIC, queue_count=1)
        async with RequestProducer(cluster.namesrv_addr, "hunt22-reply-ttl-pg") as requester:
            await requester.send(TOPIC, b"warm-up")  # the route is known: the request goes out at once
            with pytest.raises(ReplyTimeoutError) as caught:
                if orderly:
                    await requester.request_orderly(TOPIC, b"anyone?", "key", timeout_s=timeout_s)
                else:
                    await requester.request(TOPIC, b"anyone?", timeout_s=timeout_s)
            return caught.value

    error = run_within(go, 60)
    stored = wait_stored(cluster, TOPIC, 2, "the warm-up and the request", queues=1)
    request = next(m for m in stored if "CORRELATION_ID" in m.properties)
    return error, request.properties["TTL"]


def test_an_orderly_request_carries_its_whole_timeout_as_ttl(cluster: LocalCluster) -> None:
    error, ttl = _unanswered(cluster, True, TIMEOUT_S)
    assert error.timeout_s == TIMEOUT_S
    assert str(error).endswith("wait reply message timeout, 5000 ms.")
    assert ttl == "5000"


def test_a_timeout_just_short_of_a_millisecond_in_float_is_rounded(cluster: LocalCluster) -> None:
    assert int(4.02 * 1000) == 4019  # what cutting it gave
    error, ttl = _unanswered(cluster, False, 4.02)
    assert str(error).endswith("wait reply message timeout, 4020 ms.")
    assert ttl == "4020"
