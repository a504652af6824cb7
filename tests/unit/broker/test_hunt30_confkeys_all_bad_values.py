"""A broker.conf with several bad values is refused once, naming every one of them (it named the first only:
an operator fixed one key per start attempt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketstore.broker.config import load_broker_conf
from rocketstore.errors import StoreConfigError
from rocketstore.store.config import StoreConfig


def test_every_bad_value_is_named(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=\nlistenPort=abc\nhaListenPort=70000\nmaxMessageSize=4M\n"
                    "flushDiskType=SYNC\nmappedFileSizeCommitLog=100\nbrokerRole=MASTER\n")
    with pytest.raises(StoreConfigError) as info:
        load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
    text = str(info.value)
    for key in ("brokerName", "listenPort='abc'", "haListenPort 70000", "maxMessageSize='4M'",
                "flushDiskType", "mappedFileSizeCommitLog", "brokerRole"):
        assert key in text, (key, text)


def test_store_half_alone_names_every_bad_value() -> None:
    with pytest.raises(StoreConfigError) as info:
        StoreConfig.from_properties({"maxMessageSize": "0", "mappedFileSizeConsumeQueue": "10",
                                     "syncFlushTimeout": "soon"})
    text = str(info.value)
    assert "maxMessageSize" in text and "mappedFileSizeConsumeQueue" in text and "syncFlushTimeout" in text


def test_one_bad_value_is_named_as_before() -> None:
    with pytest.raises(StoreConfigError, match="^maxMessageSize must be at least 1 byte$"):
        StoreConfig.from_properties({"maxMessageSize": "0"})
