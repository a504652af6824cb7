"""GET_BROKER_CONFIG (and the broker.conf UPDATE_BROKER_CONFIG writes) has brokerIP2, haListenPort and
storePathCommitLog even when not set, and leaves out a null haMasterAddress and rocketmqHome, as 4.9.3 does.

Found running mqadmin getBrokerConfig against 4.9.3's broker and ours started with the same broker.conf (no
brokerIP2, haListenPort, haMasterAddress): 4.9.3 listed ``brokerIP2`` (its host address), ``haListenPort``
(listenPort + 1) and ``storePathCommitLog``, and no ``haMasterAddress`` (a null); ours listed none of the
three and ``haMasterAddress=`` empty.  4.9.3's ``rocketmqHome`` is $ROCKETMQ_HOME (null, left out, when
unset); ours was always empty.  Ours shows its own values: the address it registers haServerAddr with, the
HA port in use, its commitlog directory.  bitMapLengthConsumeQueueExt is the consumers' bloom filter's bit
count, as 4.9.3 sets it at start (112, where ours showed the field's initial 64)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.stats_admin import config_text, reported_config_text
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.store.config import StoreConfig


def _broker(**config: object) -> Broker:
    broker_config = BrokerConfig(broker_name="b", broker_ip1="127.0.0.1", listen_port=10911,
                                 **config)  # type: ignore[arg-type]
    return Broker(broker_config, StoreConfig(store_path_root_dir="/tmp/none"))


def test_the_derived_settings_are_shown_and_written_as_4_9_3_always_has_them(monkeypatch: pytest.MonkeyPatch
                                                                              ) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    broker = _broker()
    for text in (config_text(broker), reported_config_text(broker)):
        shown = parse_properties_text(text)
        assert shown["brokerIP2"] == "127.0.0.1"  # what haServerAddr is registered with: brokerIP1 here
        assert shown["haListenPort"] == "10912"
        assert shown["storePathCommitLog"] == "/tmp/none/commitlog"
        assert "haMasterAddress" not in shown and "rocketmqHome" not in shown
    set_ones = parse_properties_text(config_text(_broker(broker_ip2="10.0.0.2", ha_listen_port=2000,
                                                         ha_master_address="10.0.0.3:2000")))
    assert (set_ones["brokerIP2"], set_ones["haListenPort"], set_ones["haMasterAddress"]) == (
        "10.0.0.2", "2000", "10.0.0.3:2000")


def test_rocketmq_home_is_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_HOME", "/opt/rocketmq")
    assert parse_properties_text(config_text(_broker()))["rocketmqHome"] == "/opt/rocketmq"


def test_the_ha_port_in_use_is_shown_while_the_file_keeps_the_one_asked_for() -> None:
    broker = _broker()
    # started: listenPort + 1 was taken, the HA server fell back to a port the OS gave
    broker.ha_port_asked = 10912
    broker.ha_server = SimpleNamespace(port=45871)  # type: ignore[assignment]
    assert parse_properties_text(reported_config_text(broker))["haListenPort"] == "45871"
    # the file says listenPort + 1, so that the next start asks for it again (and falls back again if need be)
    assert parse_properties_text(config_text(broker))["haListenPort"] == "10912"
    # an update of haListenPort is for the next start: shown as set
    broker.config = broker.config.replace(ha_listen_port=3000)
    assert parse_properties_text(reported_config_text(broker))["haListenPort"] == "3000"


def test_bit_map_length_is_the_bloom_filter_s_bit_count_as_4_9_3_sets_it_at_start() -> None:
    # 4.9.3's getBrokerConfig showed bitMapLengthConsumeQueueExt=112 for a broker.conf without it (the field
    # starts at 64; its ConsumerFilterManager sets the bloom filter's bit count at start), ours showed 64;
    # BloomFilter.createByFn(10, 32).getM() was 160 and (20, 100) 336 in 4.9.3
    assert parse_properties_text(config_text(_broker()))["bitMapLengthConsumeQueueExt"] == "112"
    for props, bits in [({"maxErrorRateOfBloomFilter": "10", "bitMapLengthConsumeQueueExt": "64"}, "160"),
                        ({"expectConsumerNumUseFilter": "100"}, "336")]:
        broker = Broker(BrokerConfig(broker_name="b"), StoreConfig(store_path_root_dir="/tmp/none"),
                        properties=props)
        assert parse_properties_text(config_text(broker))["bitMapLengthConsumeQueueExt"] == bits
