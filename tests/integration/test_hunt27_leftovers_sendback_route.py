"""A send-back that creates the group's %DLQ% (or %RETRY%) topic is answered once the name server routes it.

4.9.3's createTopicInSendMessageBackMethod registers the broker with the name servers as soon as it creates
the topic, before the send-back goes on (registerBrokerAll).  Ours asked for a registration "soon" and
answered at once, so a consumer (or an admin tool) that looked the %DLQ% route up as soon as the send-back
was answered could be told TOPIC_NOT_EXIST.  Now the topic it created is registered beside the put, and
the answer waits for the name server to route it; a send-back that creates nothing waits for nothing.

Measured with the same Java driver (a fresh group per send-back, the route asked at once after the answer):
ours missed 1 of 100 %RETRY% routes (its name server in a process of its own); 4.9.3 itself missed 13 of
30 %DLQ% and 7 of 30 %RETRY% routes (its registration there is oneway: the broker does not wait for the name
server's answer), found 300 ms later.  Ours now finds every one.

The name server's registration lock is held (as a big registration being applied holds it) to make the
moment between the send-back and its registration long enough to see.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

import pytest
from local_cluster import LocalCluster, lock_waiters, send_msg_back

from rocketstore.broker import retry
from rocketstore.client import Producer
from rocketstore.client.producer import SendResult
from rocketstore.remoting.transport import run

TOPIC = "Hunt27LeftoversSendBack"


def _routed(cluster: LocalCluster, topic: str) -> bool:
    return cluster.call(lambda: cluster.namesrv.routes.route(topic) is not None)


@pytest.mark.parametrize(("level", "prefix"), [("-1", "%DLQ%"), ("0", "%RETRY%")])
def test_the_topic_a_send_back_created_is_routed_when_it_is_answered(
        tmp_path: Any, level: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # (a slow machine must not reach the bound of the wait)
    monkeypatch.setattr(retry, "_REGISTRATION_WAIT_S", 60.0, raising=False)
    group = f"hunt27-leftovers-sb{level}"
    created = prefix + group
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(TOPIC)

        async def send() -> SendResult:
            async with Producer(cluster.namesrv_addr, "hunt27-leftovers-sb-producer") as producer:
                return await producer.send(TOPIC, b"given back")

        sent = run(send())
        assert not _routed(cluster, created)

        def send_back() -> bool:
            """The send-back (answered SUCCESS), then whether the name server routed its topic by then."""
            run(send_msg_back(cluster.broker_addr, sent, group, TOPIC, [level]))
            return _routed(cluster, created)

        lock: asyncio.Lock = cluster.namesrv.handlers._registering
        cluster.run(lock.acquire())
        with ThreadPoolExecutor(1) as pool:
            released = False
            try:
                answered: Future[bool] = pool.submit(send_back)
                # the registration of the topic it created reached the name server, and waits behind the lock
                cluster.wait_until(lambda: lock_waiters(lock) >= 1 or answered.done(), 20, "the registration")
                wait_futures([answered], timeout=0.5)  # before the fix, answered by now (no time asserted)
                cluster.call(lock.release)
                released = True
                assert answered.result(timeout=20) is True  # routed before the answer came
            finally:
                if not released:
                    cluster.call(lock.release)

            # the topic exists now: another send-back waits for no registration (answered while one is held)
            cluster.run(lock.acquire())
            try:
                again = pool.submit(run, send_msg_back(cluster.broker_addr, sent, group, TOPIC, [level]))
                again.result(timeout=20)
                # name servers that do not route a new topic hold its send-back up for a bounded time only
                monkeypatch.setattr(retry, "_REGISTRATION_WAIT_S", 0.2, raising=False)
                stalled = f"{group}-2"
                other = pool.submit(run, send_msg_back(cluster.broker_addr, sent, stalled, TOPIC, [level]))
                other.result(timeout=20)
                assert not _routed(cluster, prefix + stalled)
            finally:
                cluster.call(lock.release)
