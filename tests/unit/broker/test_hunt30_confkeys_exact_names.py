"""broker.conf keys are applied by their exact 4.9.3 names only.

4.9.3 (MixAll.properties2Object) looks each setter's property up by one name, the field's camelCase one:
AutoCreateTopicEnable=false, broker_permission=4 or MaxMessageSize=200 in a 4.9.3 broker.conf change nothing
there (found comparing both brokers on the same file: 4.9.3 kept auto-creating topics, brokerPermission 6 and
a 4 MiB limit; ours applied all three while its own start warning called them "no broker property")."""

from __future__ import annotations

from pathlib import Path

from rocketstore.broker import stats_admin
from rocketstore.broker.config import BrokerConfig, load_broker_conf
from rocketstore.store.config import StoreConfig

LOOSE = {"AutoCreateTopicEnable": "false", "broker_permission": "4", "MaxMessageSize": "200",
         "max_message_size": "300", "brokerIp1": "10.9.9.9", "fileReservedTimeH": "1", "LISTENPORT": "1"}


def test_loose_spellings_change_nothing(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\n" + "".join(f"{k}={v}\n" for k, v in LOOSE.items()))
    broker, store, props = load_broker_conf(str(conf), store_dir=str(tmp_path / "store"))
    assert broker.auto_create_topic_enable is True
    assert broker.broker_permission == 6
    assert broker.broker_ip1 is None and broker.listen_port == 10911
    assert store.max_message_size == 4 * 1024 * 1024
    assert store.file_reserved_time_h == 72
    notice = stats_admin.start_file_notice(props)  # ... and the start warning names each as no property
    assert notice is not None and all(k in notice for k in LOOSE)


def test_exact_names_and_aliases_still_apply() -> None:
    broker = BrokerConfig.from_properties({"autoCreateTopicEnable": "false", "brokerPermission": "4",
                                           "brokerIP1": "10.9.9.9", "shortPollingTimeMills": "500"})
    assert (broker.auto_create_topic_enable, broker.broker_permission) == (False, 4)
    assert (broker.broker_ip1, broker.short_polling_time_ms) == ("10.9.9.9", 500)
    store = StoreConfig.from_properties({"maxMessageSize": "200", "fileReservedTime": "1",
                                         "checkCRCOnRecover": "false", "mappedFileSizeCommitLog": "1048576"})
    assert (store.max_message_size, store.file_reserved_time_h) == (200, 1)
    assert store.check_crc_on_recover is False and store.mapped_file_size_commit_log == 1 << 20
