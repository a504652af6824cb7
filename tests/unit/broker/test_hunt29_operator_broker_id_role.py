"""brokerId as 4.9.3's BrokerStartup takes it with brokerRole: a master's id is always 0 (here with a warning;
4.9.3 says nothing), a slave with brokerId 0 (or less) does not start ("Slave's brokerId must be > 0").

Found starting `rocketstore broker` from 4.9.3-style files: brokerRole=ASYNC_MASTER with brokerId=3 registered
as broker id 3 (`cluster list` BID 3), no master to the name servers, so no producer could send to it; and
brokerRole=SLAVE with brokerId=0 started as a slave registered under the master's id.  4.9.3's broker
registers the first as id 0 and refuses to start the second."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketstore.broker.config import load_broker_conf
from rocketstore.errors import StoreConfigError


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    conf = tmp_path / "broker.conf"
    conf.write_text(text)
    return load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))


@pytest.mark.parametrize("role", ["ASYNC_MASTER", "SYNC_MASTER"])
def test_a_masters_id_is_0_whatever_the_file_says(tmp_path: Path, role: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rocketstore.broker.config")
    broker, _, props = _load(tmp_path, f"brokerName=b\nbrokerId=3\nbrokerRole={role}\n")
    assert broker.broker_id == 0
    assert props["brokerId"] == "3"  # the file's text is kept as written
    assert any("brokerId=3 acts as 0" in r.getMessage() for r in caplog.records)
    broker, _, _ = _load(tmp_path, "brokerName=b\nbrokerId=3\n")  # ASYNC_MASTER by default
    assert broker.broker_id == 0


def test_a_slave_needs_an_id_above_0(tmp_path: Path) -> None:
    with pytest.raises(StoreConfigError, match="Slave's brokerId must be > 0"):
        _load(tmp_path, "brokerName=b\nbrokerId=0\nbrokerRole=SLAVE\n")
    with pytest.raises(StoreConfigError, match="Slave's brokerId must be > 0"):
        _load(tmp_path, "brokerName=b\nbrokerRole=SLAVE\n")  # brokerId defaults to 0
    broker, _, _ = _load(tmp_path, "brokerName=b\nbrokerId=2\nbrokerRole=SLAVE\n")
    assert broker.broker_id == 2
