"""How a request message's send fails, as 4.9.3's DefaultMQProducerImpl.request sends it: an async send,
which MQClientAPIImpl.sendMessageAsync retries on a transport error only (retryTimesWhenSendAsyncFailed),
never on a broker's error answer; that answer fails the request at once ("send request message to <topic>
fail", the broker's error as the cause).  A plain send of the same producer still retries on another broker,
as a sync send does.  Real name server and two brokers; no durations asserted.
"""

from __future__ import annotations

from pathlib import Path

from local_cluster import LocalCluster, run_within

from rocketstore.broker.broker import Broker
from rocketstore.client import RequestProducer
from rocketstore.client.errors import BrokerError
from rocketstore.client.request_producer import ReplyTimeoutError, RequestSendError
from rocketstore.message.record import StoredMessage
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool

TEST_TIMEOUT_S = 90.0
TOPIC = "RpcHalfGoneTopic"


def test_a_brokers_error_fails_the_request_without_a_retry_on_another_broker(tmp_path: Path) -> None:
    """The topic on two brokers; broker-a (no auto-creation) loses it after the requester cached the route,
    and answers TOPIC_NOT_EXIST (a code a sync send retries).  Of two requests, one goes to each broker first:
    the one to broker-a fails with that answer as its cause instead of being retried on broker-b."""
    with LocalCluster(tmp_path / "a", auto_create_topic_enable=False) as cluster:
        broker_b = cluster.start_broker(tmp_path / "b")
        try:
            b_addr = f"127.0.0.1:{broker_b.port}"
            cluster.create_topic_on(TOPIC, [cluster.broker_addr, b_addr], queues=1)

            async def go() -> tuple[list[BaseException], list[str]]:
                async with RequestProducer(cluster.namesrv_addr, "rpc-client", retry_times=2) as requester:
                    await requester.discover(TOPIC)  # both brokers' queues cached
                    pool = ConnectionPool()
                    try:
                        gone = await pool.request(cluster.broker_addr, RemotingCommand.request(
                            RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}), 10)
                    finally:
                        await pool.close()
                    assert gone.code == ResponseCode.SUCCESS, gone.remark
                    errors: list[BaseException] = []
                    for i in range(2):
                        try:
                            await requester.request(TOPIC, f"req-{i}".encode(), timeout_s=2.0)
                        except (RequestSendError, ReplyTimeoutError) as exc:
                            errors.append(exc)
                    # a plain send still retries on broker-b when broker-a refuses it
                    plain = [await requester.send(TOPIC, f"plain-{i}".encode()) for i in range(2)]
                    return errors, [r.message_queue.broker_name for r in plain]

            errors, plain_brokers = run_within(go, TEST_TIMEOUT_S)
            assert broker_b.store.wait_dispatched(10)  # every send in its consume queue, read next
            on_b = sorted(m.body for m in cluster.call(lambda: _all_on(broker_b)))
        finally:
            cluster.run(broker_b.close())

    send_errors = [e for e in errors if isinstance(e, RequestSendError)]
    assert len(send_errors) == 1, errors
    assert str(send_errors[0]) == f"send request message to <{TOPIC}> fail"
    cause = send_errors[0].__cause__
    assert isinstance(cause, BrokerError) and cause.code == ResponseCode.TOPIC_NOT_EXIST, cause
    assert len([e for e in errors if isinstance(e, ReplyTimeoutError)]) == 1, "the other was sent to broker-b"
    assert plain_brokers == ["broker-b", "broker-b"]
    # broker-b holds the request sent to it first and the two plain messages: no request retried there
    requests_on_b = [m for m in on_b if m.startswith(b"req-")]
    assert len(requests_on_b) == 1, on_b
    assert [m for m in on_b if m.startswith(b"plain-")] == [b"plain-0", b"plain-1"], on_b


def _all_on(broker: Broker) -> list[StoredMessage]:
    found: list[StoredMessage] = []
    offset = 0
    while batch := broker.store.get(TOPIC, 0, offset, 32).messages:
        found.extend(batch)
        offset = batch[-1].queue_offset + 1
    return found

