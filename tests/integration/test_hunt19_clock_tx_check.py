"""A transaction check round over a wall clock stepped back while it runs: a real broker on 127.0.0.1 port
0, a half message stored, then one check round during which the clock goes back an hour (the check
service's clock and the store's, as an NTP step moves both).

4.9.3 ends a round at the first half message stored at or after the round began; the copies a round writes
carry a store time an hour before that, so the scan went on into them, checked the message again (a new
copy, its check count raised) and again, up to transactionCheckMax, and gave it up within the one round,
before its producer could answer a single check.  The round now ends where the queue ended when it began.
The dispatcher is made to keep up with each put of the round (the worst case; under load it does)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from local_cluster import SMALL_STORE, run_within

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker import transactions as transactions_module
from rocketstore.broker.transactions import CHECK_MAX_TIME_TOPIC, HALF_TOPIC, half_message
from rocketstore.message.properties import PropertyName
from rocketstore.message.record import Message
from rocketstore.store import commitlog as commitlog_module
from rocketstore.store.config import StoreConfig
from rocketstore.store.results import PutMessageStatus, PutResult

HOUR_MS = 3600 * 1000


def test_a_clock_stepped_back_during_a_check_round_checks_each_half_message_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        config = BrokerConfig(broker_name="broker-clock", listen_port=0, listen_host="127.0.0.1",
                              broker_ip1="127.0.0.1", transaction_check_interval_ms=3_600_000)
        broker = Broker(config, StoreConfig(store_path_root_dir=str(tmp_path / "broker"), **SMALL_STORE))
        await broker.start()
        try:
            born = int(time.time() * 1000) - 60_000  # past the transaction timeout: due for a check
            props = {PropertyName.UNIQ_KEY: "UNIQ-CLOCK", PropertyName.TRAN_MSG: "true",
                     PropertyName.PGROUP: "Hunt19ClockTxGroup"}
            half = half_message("Hunt19ClockTopic", 0, b"pending", props, 0, 0, born, broker.store_host,
                                broker.store_host, 0)
            assert (await broker.put(half, wait=False)).status is PutMessageStatus.PUT_OK

            real_put = broker.put

            async def put_dispatched(message: Message, **kw: object) -> PutResult:
                result = await real_put(message, **kw)  # type: ignore[arg-type]
                broker.store.wait_dispatched(5.0)
                return result

            monkeypatch.setattr(broker, "put", put_dispatched)
            real_ms, real_ns = transactions_module._now_ms, commitlog_module._time_ns
            stepped = [False]

            def check_clock_ms() -> int:  # the round's start is read before the step, every later time after
                now = real_ms()
                if not stepped[0]:
                    stepped[0] = True
                    return now
                return now - HOUR_MS

            monkeypatch.setattr(transactions_module, "_now_ms", check_clock_ms)
            monkeypatch.setattr(commitlog_module, "_time_ns",
                                lambda: real_ns() - HOUR_MS * 1_000_000 if stepped[0] else real_ns())
            await broker.transactions.check()

            store = broker.store
            store.wait_dispatched(5.0)
            assert store.max_offset(HALF_TOPIC, 0) == 2, "the half message was copied again in the same round"
            [copy] = store.get(HALF_TOPIC, 0, 1, 1).messages
            assert copy.properties[PropertyName.TRANSACTION_CHECK_TIMES] == "1"
            assert CHECK_MAX_TIME_TOPIC not in store.topics(), "the half message was given up in one round"
        finally:
            await broker.close()

    run_within(scenario, 60)
