"""The transaction check meets records damaged on disk: a clean open keeps a record whose body fails its CRC
(it was synced whole), so the check service's own reads of RMQ_SYS_TRANS_OP_HALF_TOPIC and
RMQ_SYS_TRANS_HALF_TOPIC reach it.  A real broker on 127.0.0.1 port 0, restarted over a store whose op
record (or half message) had a bit flipped after the clean close.

A damaged op record raised out of every round: no half message of the queue was checked again, for good.
It is now passed over with an ERROR naming it: its body (the half message's queue offset) cannot be trusted,
so the half message it may name is asked about once more (a producer answers the same again), rather than
taken as ended on the word of a changed body.  4.9.3 reads the op body unchecked: a flipped digit names
another half message, which is then never checked, and the one really ended is asked about again.

A damaged half message is passed over too (never copied: a copy would carry its changed body under a fresh
CRC), and the messages after it are checked."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from local_cluster import SMALL_STORE, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.transactions import CHECK_GROUP, HALF_TOPIC, OP_TOPIC, half_message
from rocketstore.message.properties import PropertyName
from rocketstore.store.config import StoreConfig
from rocketstore.store.results import PutMessageStatus

#: a byte inside the body of a record with IPv4 hosts (its header is 88 bytes)
BODY_BYTE = 88


def _broker(path: Path) -> Broker:
    config = BrokerConfig(broker_name="broker-bitrot", listen_port=0, listen_host="127.0.0.1",
                          broker_ip1="127.0.0.1",
                          transaction_check_interval_ms=3_600_000)  # the test runs the rounds
    return Broker(config, StoreConfig(store_path_root_dir=str(path), **SMALL_STORE))


async def _put_halves(broker: Broker, count: int) -> None:
    born = int(time.time() * 1000) - 60_000  # past the transaction timeout: due for a check
    for i in range(count):
        props = {PropertyName.UNIQ_KEY: f"UNIQ-BITROT-{i}", PropertyName.TRAN_MSG: "true",
                 PropertyName.PGROUP: "Hunt20BitrotTxGroup"}
        half = half_message("Hunt20BitrotTopic", 0, b"pending %d" % i, props, 0, 0, born, broker.store_host,
                            broker.store_host, 0)
        assert (await broker.put(half, wait=False)).status is PutMessageStatus.PUT_OK


def _flip_body_byte(path: Path, commit_log_offset: int) -> None:
    with open(path / "commitlog" / f"{0:020d}", "r+b") as segment:
        segment.seek(commit_log_offset + BODY_BYTE)
        byte = segment.read(1)[0]
        segment.seek(commit_log_offset + BODY_BYTE)
        segment.write(bytes([byte ^ 0x01]))


def test_a_damaged_op_record_does_not_stop_the_checks_of_its_queue(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        broker = _broker(tmp_path)
        await broker.start()
        try:  # half 0 ended (its op record written), half 1 open
            await _put_halves(broker, 2)
            assert broker.store.wait_dispatched(5.0)
            [ended] = broker.store.get(HALF_TOPIC, 0, 0, 1).messages
            assert await broker.transactions.write_op(ended)
            assert broker.store.wait_dispatched(5.0)
            [(op_at, _, _)] = broker.store.queue_entries(OP_TOPIC, 0, 0, 1)  # type: ignore[misc]
        finally:
            await broker.close()
        _flip_body_byte(tmp_path, op_at)  # its body "0" now reads "1"

        broker = _broker(tmp_path)
        await broker.start()
        try:
            store = broker.store
            assert store.recovery.damaged_records == (op_at,)
            with caplog.at_level(logging.ERROR, logger="rocketstore.broker.transactions"):
                await broker.transactions.check()  # raised MessageDecodeError: every round did
            assert store.wait_dispatched(5.0)
            # both asked about (half 0 once more: its op record's word is lost), in copies at the queue's end
            copies = store.get(HALF_TOPIC, 0, 2, 8).messages
            assert [m.body for m in copies] == [b"pending 0", b"pending 1"]
            assert broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0) == 2
            assert broker.offsets.query(CHECK_GROUP, OP_TOPIC, 0) == 1  # not read again every round
        finally:
            await broker.close()

    run_within(scenario, 60)
    [line] = [r.getMessage() for r in caplog.records
              if r.name == "rocketstore.broker.transactions" and "damaged" in r.getMessage()]
    assert f"{OP_TOPIC} queue 0 queue offset 0" in line and "body CRC mismatch" in line


def test_a_damaged_half_message_is_passed_over_not_copied(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        broker = _broker(tmp_path)
        await broker.start()
        try:
            await _put_halves(broker, 3)
            assert broker.store.wait_dispatched(5.0)
            [(damaged_at, _, _)] = broker.store.queue_entries(HALF_TOPIC, 0, 1, 1)  # type: ignore[misc]
        finally:
            await broker.close()
        _flip_body_byte(tmp_path, damaged_at)

        broker = _broker(tmp_path)
        await broker.start()
        try:
            store = broker.store
            with caplog.at_level(logging.ERROR, logger="rocketstore.broker.transactions"):
                await broker.transactions.check()
            assert store.wait_dispatched(5.0)
            assert [m.body for m in store.get(HALF_TOPIC, 0, 3, 8).messages] == [b"pending 0", b"pending 2"]
            assert broker.offsets.query(CHECK_GROUP, HALF_TOPIC, 0) == 3
        finally:
            await broker.close()

    run_within(scenario, 60)
    [line] = [r.getMessage() for r in caplog.records
              if r.name == "rocketstore.broker.transactions" and "damaged" in r.getMessage()]
    assert f"{HALF_TOPIC} queue 0 queue offset 1" in line and "body CRC mismatch" in line
