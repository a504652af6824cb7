"""Puts the store refuses before writing (4.9.3's checkStoreStatus: SERVICE_NOT_AVAILABLE when it is a
slave, shut down or not writable, e.g. disk full; OS_PAGECACHE_BUSY) are not counted: 4.9.3 returns them
before it times the put, so neither putMessageFailedTimes nor the latency bands see them.  A put the
commitlog itself refuses (a body too big: MESSAGE_ILLEGAL) is a failed put."""

from __future__ import annotations

import pytest

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.store.results import PutMessageStatus, PutResult


@pytest.mark.parametrize("status", [PutMessageStatus.SERVICE_NOT_AVAILABLE, PutMessageStatus.OS_PAGECACHE_BUSY])
def test_a_put_refused_before_the_write_is_not_a_failed_put(status: PutMessageStatus) -> None:
    broker = Broker(BrokerConfig(broker_name="b", broker_cluster_name="C"))
    stats = broker.stats.store
    broker.count_put(PutResult(status), began_ns=1, sent=True)
    assert stats.put_failed_count == 0 and sum(stats.bands) == 0 and stats.put_max_ms == 0
    broker.count_put(PutResult(PutMessageStatus.MESSAGE_ILLEGAL, topic="T"), began_ns=1, sent=True)
    assert stats.put_failed_count == 1 and sum(stats.bands) == 1
    assert broker.stats.store.runtime_info(0)["putMessageFailedTimes"] == "1"
