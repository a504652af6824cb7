"""The transactional producer holds at most ``check_request_hold_max`` of the broker's CHECK_TRANSACTION_STATE
requests waiting for its check listener (4.9.3's TransactionMQProducer.checkRequestHoldMax, the bound of the
check thread's queue, whose executor rejects the rest): while the listener is stuck, a broker re-checking
every half message each round no longer piles up checks without end.  Real name server and broker checking
every 200 ms."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from local_cluster import LocalCluster, run_within
from test_python_transactions import FAST_CHECKS, ROLLBACK, UNKNOW, until

from rocketstore.client import TransactionMessage, TransactionProducer
from rocketstore.client.transaction_producer import CHECK_REQUEST_HOLD_MAX

TEST_TIMEOUT_S = 90.0


def test_checks_past_the_hold_max_are_dropped_while_the_listener_is_stuck(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert CHECK_REQUEST_HOLD_MAX == 2000  # 4.9.3's default
    topic, group = "Hunt19TxCheckHold", "hunt19-tx-check-hold"
    release = threading.Event()
    asked: list[TransactionMessage] = []

    def check(message: TransactionMessage) -> object:
        asked.append(message)
        release.wait(60)
        return ROLLBACK

    most_held = 0
    with LocalCluster(tmp_path / "store", **FAST_CHECKS) as cluster:
        async def go() -> None:
            nonlocal most_held
            producer = TransactionProducer(cluster.namesrv_addr, group, check, check_request_hold_max=2)
            async with producer:
                for i in range(6):
                    await producer.send_in_transaction(topic, f"undecided {i}".encode(), lambda m, a: UNKNOW)

                def dropped() -> bool:
                    nonlocal most_held
                    most_held = max(most_held, len(producer._checks))
                    return any("dropped" in r.getMessage() for r in caplog.records)

                try:
                    await until(dropped, "a check dropped past check_request_hold_max")
                finally:
                    release.set()
                await until(lambda: not producer._checks, "the held checks answered")

        with caplog.at_level(logging.WARNING, logger="rocketstore.client.transaction_producer"):
            run_within(go, TEST_TIMEOUT_S)
    assert asked, "the broker asked the producer"
    assert most_held <= 3, most_held  # one answered, two waiting
    with pytest.raises(ValueError, match="check_request_hold_max"):
        TransactionProducer("127.0.0.1:9876", group, check, check_request_hold_max=-1)
