"""brokerId=-1 on a master: 4.9.3's BrokerStartup sets every master's id to 0 (checked: a 4.9.3 broker with
brokerId=-1 started and registered as id 0); ours refused to start ("brokerId must be >= 0")."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketstore.broker.config import load_broker_conf
from rocketstore.errors import StoreConfigError


@pytest.mark.parametrize("role", ["ASYNC_MASTER", "SYNC_MASTER"])
def test_a_master_with_id_minus_one_starts_as_0(tmp_path: Path, role: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.config")
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\nbrokerId=-1\nbrokerRole={role}\n")
    broker, _, _ = load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
    assert broker.broker_id == 0
    assert any("brokerId=-1 acts as 0" in r.getMessage() for r in caplog.records)


def test_a_slave_with_id_minus_one_is_still_refused(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nbrokerId=-1\nbrokerRole=SLAVE\n")
    with pytest.raises(StoreConfigError, match="brokerId"):
        load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
