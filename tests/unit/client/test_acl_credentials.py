"""ACL signing on the client side: a connection (or pool, or client) made with SessionCredentials puts
AccessKey and a Signature on every request and oneway it sends, recomputable from the frame a real local
server decodes; without credentials nothing is added; responses are never signed; the secret never shows."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rocketstore.client import (
    BlockingPushConsumer,
    ConsumeStatus,
    OutgoingMessage,
    Producer,
    PullConsumer,
    PushConsumer,
    SessionCredentials,
)
from rocketstore.client.admin import AdminClient
from rocketstore.remoting.acl_signing import sign, signing_content
from rocketstore.remoting.bodies import BrokerData, QueueData, TopicRouteData
from rocketstore.remoting.codes import RequestCode, ResponseCode, SerializeType
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.server import RemotingServer, RequestRouter
from rocketstore.remoting.transport import Connection, ConnectionPool, connect

TEST_TIMEOUT_S = 10.0
AK = "RocketMQ-ak"
SK = "secret-12345678"
CREDS = SessionCredentials(AK, SK)


def run(test: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(test(), TEST_TIMEOUT_S)

    return asyncio.run(bounded())


class Recorder:
    """A local server answering SUCCESS to every request of its codes, keeping each request as decoded."""

    def __init__(self, *codes: int) -> None:
        self.seen: list[RemotingCommand] = []
        self.router = RequestRouter({code: self.record for code in codes})
        self.server = RemotingServer(self.router)

    async def record(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.seen.append(request)
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"answer": "yes"})

    async def start(self) -> str:
        await self.server.start("127.0.0.1", 0)
        return self.server.address

    async def wait_for(self, count: int) -> None:
        while len(self.seen) < count:
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        await self.server.close()


def assert_signed(request: RemotingCommand, secret: str = SK, access_key: str = AK) -> None:
    """The Signature a broker recomputes from the decoded request (all extFields but Signature, + body)."""
    ext = request.ext_fields
    assert ext["AccessKey"] == access_key
    assert ext["Signature"] == sign(secret, signing_content(ext, request.body))


def test_a_connection_with_credentials_signs_requests_and_oneways_over_fields_and_body() -> None:
    async def go() -> None:
        recorder = Recorder(7, 1000)
        client = await connect(await recorder.start(), credentials=CREDS)
        try:
            reply = await client.request(RemotingCommand.request(1000, {"topic": "T", "b": "x\u00e9"}, b"payload"), 5)
            await client.oneway(RemotingCommand.request(7, {"consumerGroup": "G"}, b"one-way body"))
            binary = RemotingCommand.request(1000, {"queueId": "3"}, b"\x00\x01",
                                             serialize_type=SerializeType.ROCKETMQ)
            await client.request(binary, 5)
            # a None field is left out (as the codec leaves it out), a scalar signed as Java's toString()
            await client.request(RemotingCommand.request(1000, {"n": None, "i": 5, "f": True}), 5)  # type: ignore[dict-item]
            await recorder.wait_for(4)
        finally:
            await client.aclose()
            await recorder.close()
        assert "AccessKey" not in reply.ext_fields and "Signature" not in reply.ext_fields
        for request in recorder.seen:
            assert_signed(request)
        by_code = sorted(recorder.seen, key=lambda r: (r.code, len(r.ext_fields)))
        oneway = by_code[0]
        assert oneway.code == 7 and oneway.is_oneway and oneway.body == b"one-way body"
        assert "SecurityToken" not in oneway.ext_fields
        first = next(r for r in recorder.seen if r.ext_fields.get("topic") == "T")
        assert first.body == b"payload" and first.ext_fields["b"] == "x\u00e9"
        # the body is covered: the same fields without it do not give this signature
        assert first.ext_fields["Signature"] != sign(SK, signing_content(first.ext_fields))
        scalars = next(r for r in recorder.seen if "i" in r.ext_fields)
        assert scalars.ext_fields["i"] == "5" and scalars.ext_fields["f"] == "true" and "n" not in scalars.ext_fields
        assert any(r.serialize_type == SerializeType.ROCKETMQ for r in recorder.seen)

    run(go)


def test_a_security_token_is_sent_and_signed() -> None:
    async def go() -> None:
        recorder = Recorder(1000)
        client = await connect(await recorder.start(), credentials=SessionCredentials(AK, SK, "sts-token"))
        try:
            await client.request(RemotingCommand.request(1000, {"x": "1"}), 5)
        finally:
            await client.aclose()
            await recorder.close()
        (request,) = recorder.seen
        assert request.ext_fields["SecurityToken"] == "sts-token"
        assert_signed(request)

    run(go)


def test_a_pool_with_credentials_signs_on_every_connection_it_opens() -> None:
    async def go() -> None:
        first, second = Recorder(1000, 7), Recorder(1000)
        addrs = [await first.start(), await second.start()]
        pool = ConnectionPool(credentials=CREDS)
        try:
            for addr in addrs:
                await pool.request(addr, RemotingCommand.request(1000, {"addr": addr}, b"b"), 5)
            await pool.oneway(addrs[0], RemotingCommand.request(7, {"k": "v"}))
            await first.wait_for(2)
        finally:
            await pool.close()
            await first.close()
            await second.close()
        assert len(first.seen) == 2 and len(second.seen) == 1
        for request in first.seen + second.seen:
            assert_signed(request)

    run(go)


def test_without_credentials_nothing_is_added() -> None:
    async def go() -> None:
        recorder = Recorder(1000, 7)
        addr = await recorder.start()
        client = await connect(addr)
        pool = ConnectionPool()
        try:
            await client.request(RemotingCommand.request(1000, {"x": "1"}, b"body"), 5)
            await client.oneway(RemotingCommand.request(7, {"y": "2"}))
            await pool.request(addr, RemotingCommand.request(1000, {"z": "3"}), 5)
            await recorder.wait_for(3)
        finally:
            await client.aclose()
            await pool.close()
            await recorder.close()
        assert sorted(map(str, (r.ext_fields for r in recorder.seen))) == [
            str({"x": "1"}), str({"y": "2"}), str({"z": "3"})]

    run(go)


def test_responses_are_never_signed() -> None:
    """A broker calling back into a client (NOTIFY_CONSUMER_IDS_CHANGED): the client's answer is unsigned."""

    async def go() -> None:
        answers: list[RemotingCommand] = []

        async def call_back(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            answers.append(await conn.request(RemotingCommand.request(40, {"q": "?"}), 5))
            return request.make_response(ResponseCode.SUCCESS)

        async def client_handler(conn: Connection, request: RemotingCommand) -> RemotingCommand:
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"a": "b"}, body=b"reply")

        server = RemotingServer(RequestRouter({1000: call_back}))
        await server.start("127.0.0.1", 0)
        client = await connect(server.address, handler=client_handler, credentials=CREDS)
        try:
            await client.request(RemotingCommand.request(1000), 5)
        finally:
            await client.aclose()
            await server.close()
        (answer,) = answers
        assert answer.is_response and dict(answer.ext_fields) == {"a": "b"} and answer.body == b"reply"

    run(go)


def test_a_pre_encoded_frame_is_refused_with_credentials() -> None:
    async def go() -> None:
        recorder = Recorder(1000)
        client = await connect(await recorder.start(), credentials=CREDS)
        try:
            with pytest.raises(ValueError, match="request_encoded"):
                await client.request_encoded(lambda opaque: b"", 1000, 5)
            assert client.pending_count == 0
        finally:
            await client.aclose()
            await recorder.close()

    run(go)


class FakeCluster(Recorder):
    """Name server and broker on one local server: routes every topic to itself (broker-a, 4 queues) and
    accepts every send."""

    def __init__(self) -> None:
        super().__init__(RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.SEND_MESSAGE_V2,
                         RequestCode.SEND_BATCH_MESSAGE)

    async def record(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.seen.append(request)
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            route = TopicRouteData((QueueData("broker-a", 4, 4, 6),),
                                   (BrokerData("DefaultCluster", "broker-a", {0: self.server.address}),))
            return request.make_response(ResponseCode.SUCCESS, body=route.encode())
        return request.make_response(ResponseCode.SUCCESS, ext_fields={
            "queueId": request.ext_fields.get("e", "0"), "queueOffset": "0", "msgId": "0A"})

    def sends(self) -> list[RemotingCommand]:
        return [r for r in self.seen if r.code != RequestCode.GET_ROUTEINFO_BY_TOPIC]


def spy_request_encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = Connection.request_encoded

    async def spy(self: Connection, encode: Callable[[int], bytes], code: int, timeout_s: float) -> RemotingCommand:
        calls.append(code)
        return await original(self, encode, code, timeout_s)

    monkeypatch.setattr(Connection, "request_encoded", spy)
    return calls


def test_a_producer_with_credentials_signs_every_send_and_its_route_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = spy_request_encoded(monkeypatch)

    async def go() -> None:
        cluster = FakeCluster()
        addr = await cluster.start()
        try:
            async with Producer(addr, "acl-producer", credentials=CREDS) as producer:
                small = await producer.send("TopicA", b"hello", tags="TagA")
                await producer.send("TopicA", b"x" * 20_000, keys="k1", properties={"p": "q"})
                await producer.send_batch("TopicA", [OutgoingMessage(b"m1"), OutgoingMessage(b"m2")])
                await producer.send_orderly("TopicA", b"ordered", "key-1")
                await producer.send_oneway("TopicA", b"oneway")
                while len(cluster.sends()) < 5:  # the oneway send has no answer to wait for
                    await asyncio.sleep(0.01)
        finally:
            await cluster.close()
        assert small.status == "SEND_OK"
        sends = cluster.sends()
        assert len(sends) == 5
        assert [r.body for r in sends[:1]] == [b"hello"]
        for request in cluster.seen:  # the name server requests are signed too
            assert_signed(request)
        assert any(r.code == RequestCode.GET_ROUTEINFO_BY_TOPIC for r in cluster.seen)
        hello = sends[0]
        assert hello.ext_fields["b"] == "TopicA"
        assert hello.ext_fields["Signature"] != sign(SK, signing_content(hello.ext_fields))  # the body counts

    run(go)
    assert encoded == [], "a signed send must not go out as a template's pre-encoded frame"


def test_a_producer_without_credentials_sends_unsigned_through_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = spy_request_encoded(monkeypatch)

    async def go() -> None:
        cluster = FakeCluster()
        addr = await cluster.start()
        try:
            async with Producer(addr, "plain-producer") as producer:
                await producer.send("TopicA", b"hello")
        finally:
            await cluster.close()
        for request in cluster.seen:
            assert "AccessKey" not in request.ext_fields and "Signature" not in request.ext_fields

    run(go)
    assert encoded == [int(RequestCode.SEND_MESSAGE_V2)]


def test_every_client_hands_its_credentials_to_its_pool() -> None:
    async def go() -> None:
        clients: list[Any] = [Producer("127.0.0.1:1", credentials=CREDS),
                              PullConsumer("127.0.0.1:1", "g", credentials=CREDS),
                              AdminClient("127.0.0.1:1", credentials=CREDS)]
        push = PushConsumer("127.0.0.1:1", "g", {"T": "*"}, lambda ms: ConsumeStatus.CONSUME_SUCCESS,
                            credentials=CREDS, consume_concurrency=1)
        assert push.consumer.pool.credentials is CREDS
        push._executor.shutdown(wait=False)
        for client in clients:
            assert client.pool.credentials is CREDS
            await client.close()
        plain = Producer("127.0.0.1:1")
        assert plain.pool.credentials is None
        await plain.close()

    run(go)
    blocking = BlockingPushConsumer("127.0.0.1:1", "g", {"T": "*"}, lambda ms: ConsumeStatus.CONSUME_SUCCESS,
                                    credentials=CREDS)
    try:
        assert blocking.consumer.consumer.pool.credentials is CREDS
    finally:
        blocking.shutdown()


def test_the_secret_never_shows_in_a_repr() -> None:
    creds = SessionCredentials("RocketMQ", "very-secret-key", "sts-secret-token")
    for text in (repr(creds), str(creds), f"{creds!r}", repr([creds]), repr({"credentials": creds})):
        assert "very-secret-key" not in text and "sts-secret-token" not in text
        assert "RocketMQ" in text
    assert creds.secret_key == "very-secret-key"
    with pytest.raises(dataclasses.FrozenInstanceError):
        creds.secret_key = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        SessionCredentials("", "x")
    assert SessionCredentials("a", "b") == SessionCredentials("a", "b")
