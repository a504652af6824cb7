"""A transaction left open, the broker killed (kill -9) before its check offset was saved, and restarted: the
producer's check listener is asked once and the message is committed once (session 15's crash hunt).

Found with ``rocketstore serve`` killed at random under transactional load: after each kill the next broker
scanned the half queue from the last saved check offset again, copied the open half message once more for
its check, while the copies the killed broker had written were still further on in the queue.  The next
round then copied and checked every one of them; the producer answered COMMIT to each check and the message
reached its topic once per copy (three times after two kills).

The consumer offsets are saved only every hour here, so the check offset is never saved before a kill: the
one thing that makes the test deterministic.  Deadlines only, no durations asserted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from serve_process import ServeProcess, free_port, wait_for, write_broker_conf

from rocketstore.client import LocalTransactionState, PullConsumer, TransactionMessage, TransactionProducer
from rocketstore.remoting.codes import RequestCode, ResponseCode
from rocketstore.remoting.command import RemotingCommand
from rocketstore.remoting.transport import ConnectionPool, run

TOPIC = "Hunt15TxStale"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
WAIT_S = 30.0


def _conf(tmp_path: Path) -> Path:
    return write_broker_conf(tmp_path / "broker.conf", transactionCheckInterval=300, transactionTimeOut=200,
                             flushConsumerOffsetInterval=3_600_000)


async def _broker_offset(broker_addr: str, code: int, ext: dict[str, str]) -> int:
    """GET_MAX_OFFSET or QUERY_CONSUMER_OFFSET asked of the broker itself (the name servers route no system
    topic); -1 for an offset the broker does not have."""
    pool = ConnectionPool()
    try:
        response = await pool.request(broker_addr, RemotingCommand.request(code, ext), 5)
    finally:
        await pool.close()
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return -1
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
    return int(response.ext_fields["offset"])


async def _queue_end(broker_addr: str, topic: str) -> int:
    return await _broker_offset(broker_addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})


async def _check_offset(broker_addr: str) -> int:
    return await _broker_offset(broker_addr, RequestCode.QUERY_CONSUMER_OFFSET,
                                {"consumerGroup": CHECK_GROUP, "topic": HALF_TOPIC, "queueId": "0"})


async def _bodies(namesrv: str) -> list[bytes]:
    async with PullConsumer(namesrv, "hunt15-inspector") as consumer:
        found: list[bytes] = []
        for mq in await consumer.queues(TOPIC):
            result = await consumer.pull(mq, 0)
            found.extend(m.body for m in result.messages)
        return found


def _start(store: Path, conf: Path, ports: tuple[int, int]) -> ServeProcess:
    return ServeProcess(store, conf, namesrv_port=ports[0], broker_port=ports[1]).start()


def test_an_open_transaction_is_committed_once_after_kills_before_the_check_offset_was_saved(tmp_path: Path) -> None:
    store, conf = tmp_path / "store", _conf(tmp_path)
    ports = (free_port(), free_port())  # the name server's and the broker's, the same on every start
    serve = _start(store, conf, ports)
    try:
        async def send_open_transaction() -> None:
            producer = TransactionProducer(serve.namesrv_addr, "hunt15-tx", lambda m: LocalTransactionState.UNKNOW)
            try:
                result = await producer.send_in_transaction(TOPIC, b"open", lambda m, a: LocalTransactionState.UNKNOW)
                assert result.status == "SEND_OK"
            finally:
                await producer.close()  # nobody answers the checks until the last broker

        run(send_open_transaction())
        # two lives, each killed once the check service has copied the half message at least once
        for life in range(2):
            if life:
                serve = _start(store, conf, ports)
            # at least the half message itself (queue offset 0, perhaps not dispatched yet) and earlier copies
            before = max(run(_queue_end(serve.broker_addr, HALF_TOPIC)), life + 1)
            addr = serve.broker_addr
            wait_for(lambda addr=addr, before=before: run(_queue_end(addr, HALF_TOPIC)) > before, WAIT_S,
                     "the check service to copy the open half message")
            serve.kill()
        serve = _start(store, conf, ports)
        assert run(_queue_end(serve.broker_addr, HALF_TOPIC)) >= 3, \
            "the original and at least two copies, one per killed broker"

        checks: list[str] = []

        async def answer_checks() -> None:
            def check(message: TransactionMessage) -> LocalTransactionState:
                checks.append(str(message.transaction_id))
                return LocalTransactionState.COMMIT_MESSAGE

            async with TransactionProducer(serve.namesrv_addr, "hunt15-tx", check, heartbeat_interval_s=0.2):
                loop = asyncio.get_running_loop()
                deadline = loop.time() + WAIT_S
                while not await _bodies(serve.namesrv_addr):
                    assert loop.time() < deadline, "the open transaction was not committed after its check"
                    await asyncio.sleep(0.05)
                # every half message in the queue now (copies included) is passed by the check scan ...
                end = await _queue_end(serve.broker_addr, HALF_TOPIC)
                while await _check_offset(serve.broker_addr) < end:
                    assert loop.time() < deadline, "the check scan did not pass the half messages"
                    await asyncio.sleep(0.05)
                # ... and every check answered has its op record
                while await _queue_end(serve.broker_addr, OP_TOPIC) < len(checks):
                    assert loop.time() < deadline, "the answers to the checks were not recorded"
                    await asyncio.sleep(0.05)

        run(answer_checks())
        assert len(checks) == 1, f"one check of the one open transaction, not one per copy: {checks}"
        assert run(_bodies(serve.namesrv_addr)) == [b"open"]
    finally:
        serve.kill()
