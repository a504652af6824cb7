"""A producer's errors as 4.9.3's DefaultMQProducerImpl throws them, against real brokers and name servers.

- Every try of a plain send failed: sendDefaultImpl's MQClientException "Send [n] times, still failed, cost
  [x]ms, Topic: t, BrokersSent: [...]" + FAQ, the last error its cause; ours is SendFailedError, also of the
  last error's class (callers catching that class still catch it).  A send to a chosen queue raises its
  error as it is (send(msg, mq) is one sendKernelImpl); a oneway send's one try is "Send [1] times".
- A request whose time a route look-up spent raises sendDefaultImpl's "call timeout" as it is, not wrapped
  in "send request message to <t> fail" (4.9.3 throws it before the asynchronous send).
- Route look-ups are bounded by mq_client_api_timeout_s (Java's mqClientApiTimeout), not the send timeout.

Outcomes only: no durations asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within, stored_messages

from rocketstore.client import (
    OutgoingMessage,
    Producer,
    RequestProducer,
    SendCallTimeoutError,
    SendFailedError,
)
from rocketstore.client.errors import FAQ_SUFFIX, NoRouteError, ServiceNotAvailableError, broker_error_for
from rocketstore.client.request_producer import RequestSendError
from rocketstore.errors import ConnectionClosedError, RemotingError, RocketStoreError
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer
from rocketstore.remoting.transport import Connection, ConnectionPool

TEST_TIMEOUT_S = 60.0


def test_a_send_whose_every_try_is_refused_raises_send_failed_of_the_refusal(tmp_path: Path) -> None:
    topic = "Hunt18FullDisk"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 2)
        store = cluster.broker.store
        store._cleaner.usage = lambda path: 0.95  # the commitlog's disk 95 % used: SERVICE_NOT_AVAILABLE
        store.delete_expired_files()

        async def go() -> tuple[BaseException, BaseException]:
            async with Producer(cluster.namesrv_addr, "hunt18-full-disk", retry_times=2) as producer:
                with pytest.raises(ServiceNotAvailableError) as plain:  # today's class still catches it
                    await producer.send(topic, b"refused")
                with pytest.raises(ServiceNotAvailableError) as chosen:
                    await producer.send(topic, b"refused", queue_id=1)
                with pytest.raises(SendFailedError, match=r"^Send \[3\] times, still failed") as batch:
                    await producer.send_batch(topic, [OutgoingMessage(b"a"), OutgoingMessage(b"b")])
                assert isinstance(batch.value, ServiceNotAvailableError)
                return plain.value, chosen.value

        plain, chosen = run_within(go, TEST_TIMEOUT_S)
        assert isinstance(plain, SendFailedError), repr(plain)
        text = str(plain)
        assert text.startswith(f"Send [3] times, still failed, cost [{plain.cost_ms}]ms, Topic: {topic}, "
                               f"BrokersSent: [broker-a, broker-a, broker-a]{FAQ_SUFFIX}"), text
        assert "disk" in text.lower()  # the last error's text follows Java's
        assert (plain.times, plain.brokers_sent, plain.topic) == (3, ("broker-a",) * 3, topic)
        assert plain.code == plain.response_code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert plain.remark == plain.last_error.remark  # type: ignore[attr-defined]
        cause = plain.__cause__
        assert cause is plain.last_error and type(cause) is ServiceNotAvailableError
        # send(msg, mq): one sendKernelImpl, its exception as it is
        assert type(chosen) is ServiceNotAvailableError
        cluster.wait_dispatched()
        assert stored_messages(cluster, topic, queues=2) == []


def test_sends_to_a_broker_gone_raise_send_failed_of_the_connection_error(tmp_path: Path) -> None:
    topic = "Hunt18GoneBroker"
    with LocalCluster(tmp_path / "store") as cluster:
        broker_b = cluster.start_broker(tmp_path / "store-b", "broker-b")
        try:
            cluster.create_topic_on(topic, [broker_b.address])
        except BaseException:
            cluster.run(broker_b.close())
            raise

        async def go() -> list[BaseException]:
            errors: list[BaseException] = []
            async with Producer(cluster.namesrv_addr, "hunt18-gone", retry_times=1, timeout_s=5.0) as producer:
                await producer.send(topic, b"first")  # the route (broker-b only) is cached now
                await broker_b.close()
                for send in (lambda: producer.send(topic, b"lost"),
                             lambda: producer.send_oneway(topic, b"lost"),
                             lambda: producer.send(topic, b"lost", queue_id=0)):
                    try:
                        await send()
                    except RemotingError as exc:  # today's class still catches each
                        errors.append(exc)
            return errors

        try:  # on the cluster's loop, where broker-b runs
            plain, oneway, chosen = cluster.run(go(), TEST_TIMEOUT_S)
        finally:
            cluster.run(broker_b.close())
    assert isinstance(plain, SendFailedError) and isinstance(plain, ConnectionClosedError), repr(plain)
    assert str(plain).startswith(f"Send [2] times, still failed, cost [{plain.cost_ms}]ms, Topic: {topic}, "
                                 "BrokersSent: [broker-b, broker-b]")
    assert plain.response_code == 10001  # ClientErrorCode.CONNECT_BROKER_EXCEPTION
    assert isinstance(oneway, SendFailedError) and isinstance(oneway, ConnectionClosedError), repr(oneway)
    assert str(oneway).startswith(f"Send [1] times, still failed, cost [{oneway.cost_ms}]ms, Topic: {topic}, "
                                  "BrokersSent: [broker-b]")
    assert type(chosen) is ConnectionClosedError, repr(chosen)


async def _with_namesrv(namesrv_addr: str, topic: str, delays_s: list[float],
                        use: Callable[[str], Awaitable[None]]) -> None:
    """``use(addr)`` of a name server that forwards to *namesrv_addr*, answering the n-th look-up of *topic*'s
    route after ``delays_s[n]`` (the last delay for the look-ups after)."""
    pool = ConnectionPool()
    asked = [0]

    async def forward(connection: Connection, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and request.ext_fields.get("topic") == topic:
            asked[0] += 1
            await asyncio.sleep(delays_s[min(asked[0], len(delays_s)) - 1])
        answer = await pool.request(namesrv_addr, request, 10)
        return request.make_response(answer.code, remark=answer.remark, ext_fields=answer.ext_fields,
                                     body=answer.body or b"")

    server = RemotingServer(forward)
    await server.start("127.0.0.1", 0)
    try:
        await use(server.address)
    finally:
        await server.close()
        await pool.close()


def test_a_request_whose_time_a_route_look_up_spent_raises_the_call_timeout_as_it_is(tmp_path: Path) -> None:
    topic = "Hunt18RequestSlowRoute"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        errors: list[BaseException] = []

        async def use(namesrv: str) -> None:
            # the first look-up (the request's heartbeat discovery) gets no answer within the 0.8 s route
            # timeout; the send's own look-up is answered 0.3 s later: past the request's 1 s
            async with RequestProducer(namesrv, "hunt18-request-slow", mq_client_api_timeout_s=0.8) as requester:
                try:
                    await requester.request(topic, b"late", timeout_s=1.0)
                except Exception as exc:
                    errors.append(exc)

        run_within(lambda: _with_namesrv(cluster.namesrv_addr, topic, [5.0, 0.3], use), TEST_TIMEOUT_S)
        [error] = errors
        assert type(error) is SendCallTimeoutError and str(error) == "sendDefaultImpl call timeout", repr(error)
        assert not isinstance(error, RequestSendError)
        cluster.wait_dispatched()
        assert stored_messages(cluster, topic, queues=1) == []


def test_route_look_ups_are_bounded_by_mq_client_api_timeout_not_the_send_timeout(tmp_path: Path) -> None:
    topic = "Hunt18ApiTimeout"
    with LocalCluster(tmp_path / "store") as cluster:
        cluster.create_topic(topic, 1)
        errors: list[BaseException] = []

        async def use(namesrv: str) -> None:
            # the send may take 10 s, a route look-up 0.5: a name server 2 s late gives no route (as Java's
            # getTopicRouteInfoFromNameServer(topic, mqClientApiTimeout)), and nothing is sent
            producer = Producer(namesrv, "hunt18-api-timeout", timeout_s=10.0, mq_client_api_timeout_s=0.5)
            try:
                await producer.send(topic, b"never")
            except RocketStoreError as exc:
                errors.append(exc)
            finally:
                await producer.close()

        run_within(lambda: _with_namesrv(cluster.namesrv_addr, topic, [2.0], use), TEST_TIMEOUT_S)
        [error] = errors
        assert isinstance(error, NoRouteError), repr(error)
        cluster.wait_dispatched()
        assert stored_messages(cluster, topic, queues=1) == []
        # the default is Java's 3 s, whatever the send timeout
        assert Producer(cluster.namesrv_addr, "hunt18-api-default", timeout_s=10.0).routes.timeout_s == 3.0
        with pytest.raises(ValueError, match="mq_client_api_timeout_s"):
            Producer(cluster.namesrv_addr, "hunt18-api-zero", mq_client_api_timeout_s=0)


def test_the_unit_routing_codes_are_retried_as_4_9_3s_retry_response_codes() -> None:
    for code in (ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT, ResponseCode.SYSTEM_ERROR,
                 ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST):
        assert broker_error_for(code, "r").retriable, code
    for code in (ResponseCode.SYSTEM_BUSY, ResponseCode.MESSAGE_ILLEGAL):
        assert not broker_error_for(code, "r").retriable, code
