"""GET_BROKER_CONFIG's body (stats_admin.reported_config_text): the broker's settings and the figures a 4.9.3
broker reports of its netty client and filter servers (kept without effect: broker.config_keys), the same text
UPDATE_BROKER_CONFIG writes, as 4.9.3's Configuration answers and writes one text."""

from __future__ import annotations

import os

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.stats_admin import config_text, reported_config_text
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.store.config import StoreConfig


def test_the_reported_config_adds_4_9_3s_fixed_figures_to_the_settings() -> None:
    broker = Broker(BrokerConfig(broker_name="b"), StoreConfig(store_path_root_dir="/tmp/none"))
    settings = parse_properties_text(config_text(broker))
    reported = parse_properties_text(reported_config_text(broker))
    assert reported == settings
    assert {k: reported[k] for k in ("filterServerNums", "clientCallbackExecutorThreads", "useTLS")} == {
        "filterServerNums": "0", "clientCallbackExecutorThreads": str(os.cpu_count()), "useTLS": "false"}
