"""Per-client TLS (4.9.3's ClientConfig.useTLS, DefaultMQProducer.setUseTLS): every client's ``tls=`` overrides
the process's choice (``use_client_tls``, 4.9.3's -Dtls.enable).  The broker and name server run in a
``rocketstore serve`` subprocess in enforcing mode (its own registration over TLS, tls.enable=true in its
file), so this process stays plain while its clients choose one by one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from certs import self_signed
from local_cluster import eventually
from serve_process import ServeProcess, write_broker_conf

from rocketstore.client import (
    BlockingLitePullConsumer,
    BlockingPushConsumer,
    ConsumedMessage,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    NoRouteError,
    Producer,
    PullConsumer,
    PushConsumer,
    RequestProducer,
    TransactionProducer,
)
from rocketstore.client.admin import AdminClient
from rocketstore.client.transaction_producer import LocalTransactionState, TransactionMessage
from rocketstore.errors import ConnectionClosedError
from rocketstore.remoting.tls import TlsConfig, TlsConfigError, client_context_default, use_client_tls
from rocketstore.remoting.transport import run

TOPIC = "PerClientTls"
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    directory = tmp_path_factory.mktemp("certs")
    return {name: self_signed(directory, name) for name in ("server", "stranger")}


@pytest.fixture(scope="module")
def serve(certs: dict[str, tuple[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    base = tmp_path_factory.mktemp("serve")
    cert, key = certs["server"]
    tls_file = base / "tls.properties"
    tls_file.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                        "tls.enable=true\n")
    with ServeProcess(base / "store", write_broker_conf(base / "broker.conf"),
                      extra_args=("--tls-config", str(tls_file))) as process:
        yield process


@pytest.fixture(autouse=True)
def plain_process() -> Iterator[None]:
    use_client_tls(None)
    yield
    use_client_tls(None)


def _create_topic(serve: ServeProcess, topic: str, tls: object) -> None:
    async def go() -> None:
        async with AdminClient(serve.namesrv_addr, tls=tls) as admin:  # type: ignore[arg-type]
            await admin.create_topic(topic, broker_addr=serve.broker_addr, read_queue_nums=2, write_queue_nums=2)

    run(go())


def test_tls_producer_and_consumers_reach_an_enforcing_broker_while_the_process_is_plain(
        serve: ServeProcess, certs: dict[str, tuple[str, str]]) -> None:
    assert client_context_default() is None
    _create_topic(serve, TOPIC, True)
    checking = TlsConfig(client_enable=True, client_auth_server=True, client_trust_cert_path=certs["server"][0])

    async def go() -> tuple[list[bytes], list[bytes], list[bytes]]:
        async with Producer(serve.namesrv_addr, "tls-per-client-producer", tls=True) as producer:
            for i in range(6):
                assert (await producer.send(TOPIC, f"m{i}".encode())).status == "SEND_OK"
        pulled: list[bytes] = []
        async with PullConsumer(serve.namesrv_addr, "tls-per-client-pull", tls=checking) as consumer:
            queues = await consumer.queues(TOPIC)

            async def all_dispatched() -> bool:
                return sum([await consumer.max_offset(mq) for mq in queues]) >= 6

            # the consume queues are built from the commitlog a moment after the sends are answered
            await eventually(all_dispatched, 20, "the consume queues to hold all 6 messages")
            for mq in queues:
                pulled += [m.body for m in (await consumer.pull(mq, 0, 32)).messages]
        lite = LitePullConsumer(serve.namesrv_addr, "tls-per-client-lite", tls=True, consume_from_where=FIRST)
        lite.subscribe(TOPIC)
        polled: list[bytes] = []
        await lite.start()
        try:
            deadline = asyncio.get_running_loop().time() + 20
            while len(polled) < 6 and asyncio.get_running_loop().time() < deadline:
                polled += [m.body for m in await lite.poll(1.0)]
        finally:
            await lite.close()
        pushed: list[bytes] = []

        def handle(messages: list[ConsumedMessage]) -> ConsumeStatus:
            pushed.extend(m.body for m in messages)
            return ConsumeStatus.CONSUME_SUCCESS

        push = PushConsumer(serve.namesrv_addr, "tls-per-client-push", {TOPIC: "*"}, handle, tls=True,
                            consume_from_where=FIRST)
        await push.start()
        try:
            deadline = asyncio.get_running_loop().time() + 20
            while len(pushed) < 6 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await push.shutdown()
        return pulled, polled, pushed

    pulled, polled, pushed = run(go())
    expected = sorted(f"m{i}".encode() for i in range(6))
    assert sorted(pulled) == expected
    assert sorted(polled) == expected
    assert sorted(pushed) == expected
    assert client_context_default() is None  # nothing leaked into the process's choice


def test_the_blocking_wrappers_take_tls_too(serve: ServeProcess) -> None:
    topic = "PerClientTlsBlocking"
    _create_topic(serve, topic, True)

    async def send() -> None:
        async with Producer(serve.namesrv_addr, "tls-blocking-producer", tls=TlsConfig(client_enable=True)) as p:
            for i in range(3):
                await p.send(topic, f"b{i}".encode())

    run(send())
    lite = BlockingLitePullConsumer(serve.namesrv_addr, "tls-blocking-lite", tls=True, consume_from_where=FIRST)
    lite.subscribe(topic)
    got: list[bytes] = []
    with lite:
        for _ in range(40):
            got += [m.body for m in lite.poll(0.5)]
            if len(got) >= 3:
                break
    assert sorted(got) == [b"b0", b"b1", b"b2"]
    pushed: list[bytes] = []
    with BlockingPushConsumer(serve.namesrv_addr, "tls-blocking-push", {topic: "*"},
                              lambda ms: (pushed.extend(m.body for m in ms), ConsumeStatus.CONSUME_SUCCESS)[1],
                              tls=True, consume_from_where=FIRST):
        for _ in range(400):
            if len(pushed) >= 3:
                break
            time.sleep(0.05)
    assert sorted(pushed) == [b"b0", b"b1", b"b2"]


def test_transactional_and_request_producers_take_tls(serve: ServeProcess) -> None:
    topic = "PerClientTlsTx"
    _create_topic(serve, topic, True)

    def execute(message: TransactionMessage, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def go() -> tuple[str, LocalTransactionState, str]:
        async with TransactionProducer(serve.namesrv_addr, "tls-tx-producer", lambda m: LocalTransactionState.COMMIT_MESSAGE,
                                       tls=True) as producer:
            tx = await producer.send_in_transaction(topic, b"tx", execute)
        async with RequestProducer(serve.namesrv_addr, "tls-rpc-producer", tls=True) as requester:
            sent = await requester.send(topic, b"plain send of a request producer")
        return tx.status, tx.local_transaction_state, sent.status

    assert run(go()) == ("SEND_OK", LocalTransactionState.COMMIT_MESSAGE, "SEND_OK")


def test_a_plain_client_is_refused_and_tls_false_overrides_a_tls_process(serve: ServeProcess) -> None:
    async def send(tls: object) -> str:
        async with Producer(serve.namesrv_addr, "tls-refused-producer", timeout_s=3,
                            tls=tls) as producer:  # type: ignore[arg-type]
            return (await producer.send(TOPIC, b"x")).status

    with pytest.raises(NoRouteError, match="closed"):
        run(send(None))  # the process's choice: plain, and the enforcing name server closes it
    use_client_tls(TlsConfig(client_enable=True))
    assert run(send(None)) == "SEND_OK"  # the process's choice: now TLS
    with pytest.raises(NoRouteError, match="closed"):
        run(send(False))  # this producer's own choice: plain, whatever the process says
    with pytest.raises(NoRouteError, match="closed"):
        run(send(TlsConfig(client_enable=False)))  # a config whose tls.enable is false: plain too


def test_a_client_checking_the_server_against_another_ca_is_refused(serve: ServeProcess,
                                                                     certs: dict[str, tuple[str, str]]) -> None:
    wary = TlsConfig(client_enable=True, client_auth_server=True, client_trust_cert_path=certs["stranger"][0])

    async def go() -> None:
        async with AdminClient(serve.namesrv_addr, tls=wary) as admin:
            await admin.topic_list()

    with pytest.raises(ConnectionClosedError, match="(?i)certificate"):
        run(go())


def test_a_bad_tls_setting_fails_the_client_construction(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.crt")
    with pytest.raises(TlsConfigError, match="tls.client.trustCertPath"):
        PullConsumer("127.0.0.1:9876", "g", tls=TlsConfig(client_enable=True, client_auth_server=True,
                                                          client_trust_cert_path=missing))
    with pytest.raises(TypeError, match="tls must be"):
        PullConsumer("127.0.0.1:9876", "g", tls="yes")  # type: ignore[arg-type]


def test_a_traced_producer_sends_its_traces_over_its_own_tls(serve: ServeProcess) -> None:
    """The trace producer (4.9.3's AsyncTraceDispatcher) connects as the producer it traces does: with the
    process plain, a per-client TLS producer's traces still reach the enforcing broker."""
    async def go() -> tuple[int, int]:
        producer = Producer(serve.namesrv_addr, "tls-traced-producer", tls=True, enable_trace=True)
        async with producer:
            assert (await producer.send(TOPIC, b"traced")).status == "SEND_OK"
        assert producer.trace is not None
        return producer.trace.dispatcher.sent_messages, producer.trace.dispatcher.failed_sends

    sent, failed = run(go())
    assert (sent, failed) == (1, 0)
