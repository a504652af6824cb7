"""UPDATE_BROKER_CONFIG's conversion of one body (stats_admin.updated_configs) as 4.9.3's Configuration.update
and MixAll.properties2Object do it, and the start file's keys the broker keeps (stats_admin.start_file_extras)."""

from __future__ import annotations

import pytest

from rocketstore.broker import Broker, BrokerConfig
from rocketstore.broker.config_keys import KEPT_PROPERTIES, java_value
from rocketstore.broker.stats_admin import ConfigUpdateError, config_text, start_file_extras, updated_configs
from rocketstore.message.java_properties import parse_properties_text
from rocketstore.store.config import StoreConfig


def _broker(properties: dict[str, str] | None = None) -> Broker:
    return Broker(BrokerConfig(broker_name="b"), StoreConfig(store_path_root_dir="/tmp/none"), properties=properties)


@pytest.mark.parametrize(("kind", "raw", "value"), [
    ("int", "+12", "12"), ("int", "-3", "-3"), ("int", "2147483648", None), ("int", "1_000", None),
    ("int", "1.5", None), ("int", "", None), ("long", "2147483648", "2147483648"),
    ("long", "9223372036854775808", None), ("bool", "TRUE", "true"), ("bool", "yes", "false"),
    ("str", " x ", " x "),
])
def test_values_convert_as_4_9_3s_setters_convert_them(kind: str, raw: str, value: str | None) -> None:
    assert java_value(kind, raw) == value


def test_the_keys_session_14_refused_are_taken_and_shown() -> None:
    broker = _broker()
    props = {"deleteCommitLogFilesInterval": "150", "destroyMapedFileIntervalForcibly": "90000",
             "redeleteHangedFileInterval": "60000", "deleteConsumeQueueFilesInterval": "120",
             "enableCalcFilterBitMap": "true", "filterDataCleanTimeSpan": "3600000"}
    shown = parse_properties_text(config_text(broker))
    assert {k: shown[k] for k in props} == {k: KEPT_PROPERTIES[k][1] for k in props}  # 4.9.3's defaults
    update = updated_configs(broker, props)
    assert update.extra_properties == props and update.ignored == {} and update.remark() is None
    broker.extra_properties = update.extra_properties
    shown = parse_properties_text(config_text(broker))
    assert {k: shown[k] for k in props} == props


def test_unknown_keys_and_values_that_do_not_convert_are_left_as_they_were() -> None:
    broker = _broker()
    update = updated_configs(broker, {"noSuchKey": "1", "listenPort": "ten", "brokerId": "1.5",
                                      "serverWorkerThreads": "many", "brokerPermission": "4"})
    assert set(update.ignored) == {"noSuchKey", "listenPort", "brokerId", "serverWorkerThreads"}
    assert update.broker_config.broker_permission == 4  # the rest is applied
    assert (update.broker_config.listen_port, update.broker_config.broker_id) == (10911, 0)
    assert "noSuchKey" not in update.extra_properties and "serverWorkerThreads" not in update.extra_properties
    assert "noSuchKey: not a broker property" in (update.remark() or "")


def test_enums_take_their_constant_names_only() -> None:
    update = updated_configs(_broker(), {"flushDiskType": "SYNC_FLUSH", "brokerRole": "slave"})
    assert update.store_config.flush_disk_type == "SYNC_FLUSH"
    assert str(update.store_config.broker_role) == str(_broker().store_config.broker_role)  # valueOf is exact
    assert set(update.ignored) == {"brokerRole"}


def test_the_start_files_other_keys_are_kept_and_changeable_and_unknown_ones_are_not_added() -> None:
    extras = start_file_extras({"brokerName": "b", "myOwnKey": "a", "sendMessageThreadPoolNums": "x",
                                "haSendHeartbeatInterval": "7000"})
    # a kept property that does not convert shows its default, as 4.9.3's object keeps it
    assert extras == {"myOwnKey": "a", "haSendHeartbeatInterval": "7000"}
    broker = _broker({"myOwnKey": "a"})
    assert parse_properties_text(config_text(broker))["myOwnKey"] == "a"
    update = updated_configs(broker, {"myOwnKey": "b", "otherKey": "c", "enableBatchPush": "true"})
    assert update.extra_properties["myOwnKey"] == "b" and "otherKey" not in update.extra_properties
    assert update.extra_properties["isEnableBatchPush"] == "true"  # 4.9.3's setter name of that field


def test_values_the_config_refuses_change_nothing() -> None:
    broker = _broker()
    for props in ({"brokerId": "-1", "deleteCommitLogFilesInterval": "5"}, {"messageDelayLevel": "1x"}):
        with pytest.raises(ConfigUpdateError):
            updated_configs(broker, props)
    assert broker.extra_properties == {}
