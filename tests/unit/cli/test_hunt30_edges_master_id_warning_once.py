"""``rocketstore broker -c broker.conf`` with NAMESRV_ADDR set and no name server in the file or on the command
line: the master's "brokerId=N acts as 0" warning is logged once (the file used to be loaded twice, the
second time with the environment's name server, and each load warned)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from rocketstore.cli import serve_cmds


class _Stop(Exception):
    pass


class _NoBroker:
    """Stands in for the broker: what serve_broker loaded is kept, and it stops there."""

    loaded: list[object] = []

    def __init__(self, config: object, *args: object, **kwargs: object) -> None:
        self.loaded.append(config)
        raise _Stop


def test_the_master_id_warning_is_logged_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerClusterName=c\nbrokerName=b\nbrokerId=3\nstorePathRootDir={tmp_path / 'store'}\n",
                    encoding="utf-8")
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:9")
    monkeypatch.setattr(serve_cmds, "Broker", _NoBroker)
    _NoBroker.loaded = []
    with caplog.at_level(logging.WARNING), pytest.raises(_Stop):
        asyncio.run(serve_cmds.serve_broker(str(conf), None, None, None, None))
    warnings = [r for r in caplog.records if "acts as 0" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    (loaded,) = _NoBroker.loaded
    assert loaded.broker_id == 0 and loaded.namesrv_addrs == ["127.0.0.1:9"]  # NAMESRV_ADDR still taken
