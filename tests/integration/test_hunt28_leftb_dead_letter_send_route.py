"""A send to ``%RETRY%<group>`` past the group's retries that creates ``%DLQ%<group>`` is answered once the
name server routes the %DLQ% topic.

A consumer that cannot give a message back sends it again to its %RETRY% topic with its reconsume count;
past the group's retryMaxTimes the broker stores it as a dead letter in %DLQ%<group>, created then.  That
topic was registered with the name servers "soon" and the send answered at once, so a tool that looked the
%DLQ% route up right after the answer could be told TOPIC_NOT_EXIST.  As 4.9.3 registers a topic it creates
on this path before it goes on, and as the send-back does here since session 27 (retry.register_created and
retry.routed, shared by both), the %DLQ% topic is registered beside the put and the answer waits (at most
2 s) for a name server to route it.  The name server's registration lock is held to make that moment long
enough to see.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path

import pytest
from local_cluster import LocalCluster, lock_waiters
from test_bad_input import RawConnection, send_ext

from rocketstore.broker import retry
from rocketstore.remoting import RequestCode, ResponseCode

GROUP = "hunt28-leftb-dlq"
RETRY, DLQ = f"%RETRY%{GROUP}", f"%DLQ%{GROUP}"


def _routed(cluster: LocalCluster, topic: str) -> bool:
    return cluster.call(lambda: cluster.namesrv.routes.route(topic) is not None)


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_the_dlq_topic_a_retry_send_created_is_routed_when_it_is_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flush: str) -> None:
    monkeypatch.setattr(retry, "_REGISTRATION_WAIT_S", 60.0)  # (a slow machine must not reach the bound)
    with LocalCluster(tmp_path / "store", store_overrides={"flush_disk_type": flush}) as cluster:
        conn = RawConnection(cluster.broker_addr)
        try:
            made = conn.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                                body=json.dumps({"groupName": GROUP, "retryMaxTimes": 1}).encode())
            assert made.code == ResponseCode.SUCCESS
            # a retry within the group's retries goes to %RETRY% (created by the send, registered soon)
            first = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(RETRY, j="0"), b"retried")
            assert first.code == ResponseCode.SUCCESS, first.remark
            assert not _routed(cluster, DLQ)

            def send_dead_letter() -> bool:
                """The send past the retries (answered SUCCESS), then whether its %DLQ% topic was routed."""
                sent = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(RETRY, j="3"), b"dead")
                assert sent.code == ResponseCode.SUCCESS, sent.remark
                return _routed(cluster, DLQ)

            lock: asyncio.Lock = cluster.namesrv.handlers._registering
            cluster.run(lock.acquire())
            released = False
            with ThreadPoolExecutor(1) as pool:
                try:
                    answered: Future[bool] = pool.submit(send_dead_letter)
                    cluster.wait_until(lambda: lock_waiters(lock) >= 1 or answered.done(), 20, "the registration")
                    wait_futures([answered], timeout=0.5)  # before the fix, answered by now (no time asserted)
                    cluster.call(lock.release)
                    released = True
                    assert answered.result(timeout=20) is True  # routed before the answer came
                finally:
                    if not released:
                        cluster.call(lock.release)
            cluster.wait_dispatched()
            assert cluster.call(lambda: cluster.broker.store.max_offset(DLQ, 0)) == 1

            # the %DLQ% topic exists now: the next dead letter waits for no registration
            cluster.run(lock.acquire())
            try:
                again = conn.request(RequestCode.SEND_MESSAGE_V2, send_ext(RETRY, j="5"), b"dead again")
                assert again.code == ResponseCode.SUCCESS, again.remark
            finally:
                cluster.call(lock.release)
        finally:
            conn.close()
